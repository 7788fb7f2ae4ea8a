package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/ec2"
	"github.com/sluicehq/sluice/brokers/fake"
)

// start runs the command and returns its endpoints and a stop function that
// waits for it to save and exit.
func start(t *testing.T, args ...string) (map[string]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, pw, io.Discard); pw.Close() }()
	eps := map[string]string{}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if sc.Text() == "ready" {
			break
		}
		p, u, ok := fake.ParseEndpointLine(sc.Text())
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		eps[p] = u
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return eps, func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestServesAllFiveAndStateSurvivesRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fp.json")
	eps, stop := start(t, "-state", state)
	if len(eps) != 5 || !strings.HasSuffix(eps["runpod"], "/graphql") {
		t.Fatalf("endpoints: %v", eps)
	}
	const dec = "dec-00000000000000000000000000000001"
	place := func(url string) sluice.Placement {
		a, err := ec2.New(context.Background(), ec2.Config{Endpoint: url, AccessKeyID: "AKID", SecretAccessKey: "s", Regions: []string{"us-east-1"}})
		if err != nil {
			t.Fatal(err)
		}
		b := sluice.MustMoney("12.5", "USD")
		p, err := a.Place(context.Background(), dec, 0, sluice.Line{OfferID: "aws:us-east-1:us-east-1a:p4d.24xlarge:spot",
			Provider: "aws", Market: sluice.Spot, Units: 1, GPUs: 8, Slots: 1, UnitPrice: b, Bid: &b}, bid.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := place(eps["aws"])
	stop()

	eps, stop = start(t, "-state", state)
	defer stop()
	p2 := place(eps["aws"]) // same token after a restart: the same instance
	if p1.ExternalIDs[0] != p2.ExternalIDs[0] {
		t.Fatalf("restart lost the state: %v then %v", p1.ExternalIDs, p2.ExternalIDs)
	}
}
