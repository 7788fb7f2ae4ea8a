package policy

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/sluicehq/sluice"
)

// Explanation is a decision as the compliance team reads it: every offer's
// verdict with the rules that refused it, their titles, and what the policy
// was given.
type Explanation struct {
	Revision string `json:"policy_revision"`
	// Profile is the queue profile as the policy read it (input.profile).
	Profile map[string]any `json:"profile"`
	Limits  Limits         `json:"limits"`
	Offers  []OfferVerdict `json:"offers"`
}

// OfferVerdict is one offer's verdict with reasons and their rule titles.
type OfferVerdict struct {
	Offer sluice.Offer `json:"offer"`
	// Input is the offer as the policy read it (one of input.offers).
	Input   map[string]any `json:"input"`
	Allow   bool           `json:"allow"`
	Zone    sluice.Zone    `json:"zone"`
	Reasons []Reason       `json:"reasons"`
}

// Explain evaluates the offers with the per-offer document (ResultQuery), in
// one query, at time now, and checks that the batched evaluation Sluice runs
// for a decision gives the same verdicts; a difference is an error (it would
// mean the explanation is not what decided).
func (e *Evaluator) Explain(ctx context.Context, p sluice.QueueProfile, offers []sluice.Offer, now time.Time) (Explanation, error) {
	vs, err := e.evalOffers(ctx, p, offers, now)
	if err != nil {
		return Explanation{}, err
	}
	d, err := e.Decide(ctx, p, offers, now)
	if err != nil {
		return Explanation{}, err
	}
	profile, err := ast.JSON(profileTerm(p).Value)
	if err != nil {
		return Explanation{}, err
	}
	x := Explanation{Revision: e.Revision(), Profile: profile.(map[string]any), Limits: d.Limits, Offers: make([]OfferVerdict, len(offers))}
	for i, o := range offers {
		v := vs[i]
		plain := sluice.Verdict{OfferID: o.ID, Allow: v.Allow, Zone: v.Zone, Reasons: v.reasons()}
		if !reflect.DeepEqual(plain, d.Verdicts[i]) {
			return Explanation{}, fmt.Errorf("offer %s: per-offer verdict %+v differs from the batched one %+v", o.ID, plain, d.Verdicts[i])
		}
		in, err := ast.JSON(offerTerm(o.ID, o).Value)
		if err != nil {
			return Explanation{}, err
		}
		reasons := v.Reasons
		if reasons == nil {
			reasons = []Reason{}
		}
		x.Offers[i] = OfferVerdict{Offer: o, Input: in.(map[string]any), Allow: v.Allow, Zone: v.Zone, Reasons: reasons}
	}
	return x, nil
}
