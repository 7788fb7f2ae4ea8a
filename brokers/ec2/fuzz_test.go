package ec2

import (
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/placement"
)

// FuzzOfferID: the offer id is the one text the adapter parses itself (the
// SDK parses EC2's XML answers); a parsed id always names a region and type.
func FuzzOfferID(f *testing.F) {
	for _, s := range []string{"aws:us-east-1:us-east-1a:p4d.24xlarge:spot", "aws:us-east-1:p4de.24xlarge:on-demand",
		"aws:us-east-1:us-east-1a:p4de.24xlarge:reserved:cbo-1", "aws:::spot", "sluice-dec-0123456789abcdef0123456789abcdef-l3-u1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := parseOfferID(sluice.Line{OfferID: s}); err == nil && (r.Region == "" && r.Type == "") {
			t.Fatalf("%q: empty ref", s)
		}
		if d, l, ok := placement.ParseToken(s); ok && (len(d) != 36 || l < 0) {
			t.Fatalf("%q: token %q %d", s, d, l)
		}
	})
}
