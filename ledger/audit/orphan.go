package audit

import (
	"regexp"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// Orphan is a settled release step of an instance no committed decision
// owns: reconcile found it running with a Sluice tag but no open placement
// in the ledger (reason sluice.ReleaseOrphan) and terminated it. The
// provider still billed it, so it is a cost row in the FOCUS export and
// spend in the report. reconcile records it with DecisionID "" and writes
// the tag it carried into Error as `tagged decision "<id>" line <n>: …`
// (sluice.Reconciler); Tag and TagLine are read back from there.
type Orphan struct {
	Seq      int64
	RecordID string
	Hash     string
	Release  sluice.Release
	// Tag is the decision id the instance was tagged with ("" when untagged
	// or unreadable); TagLine its line (-1 when unknown).
	Tag     string
	TagLine int
	// Decision is the tagged decision when the chain holds it (a line that
	// was already settled), else nil.
	Decision *Decision
}

var orphanTag = regexp.MustCompile(`^tagged decision ("(?:[^"\\]|\\.)*") line (-?\d+):`)

// parseOrphanTag reads the tag reconcile wrote into an orphan release's
// Error; ok=false when there is none.
func parseOrphanTag(note string) (id string, line int, ok bool) {
	m := orphanTag.FindStringSubmatch(note)
	if m == nil {
		return "", -1, false
	}
	id, err := strconv.Unquote(m[1])
	if err != nil {
		return "", -1, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return id, -1, true
	}
	return id, n, true
}

// Billed is what the orphan cost in billing, the accrued cost converted
// with an FX rate the chain recorded for the pair: the tagged decision's
// rates first, else the latest earlier decision's that has one (dividing
// rounds half away from zero to sluice.FXScale places, sluice.FXTable).
// ok=false when the accrued cost is in another currency and no recorded
// rate converts it; the amount is then the accrued cost as it is.
func (b *Book) orphanBilled(o *Orphan, billing string) (m sluice.Money, fx *sluice.FXRate, ok bool) {
	c := o.Release.AccruedCost
	if !c.IsSet() {
		return sluice.Money{Amount: decimal.Zero, Currency: billing}, nil, true
	}
	if c.Currency == billing {
		return c, nil, true
	}
	try := func(d *Decision) (sluice.Money, *sluice.FXRate, bool) {
		for _, r := range d.Rec.FX {
			if (r.Base == c.Currency && r.Quote == billing) || (r.Base == billing && r.Quote == c.Currency) {
				out, _, err := sluice.FXTable{r}.Convert(c, billing)
				if err == nil {
					return out, &r, true
				}
			}
		}
		return sluice.Money{}, nil, false
	}
	if o.Decision != nil {
		if m, fx, ok := try(o.Decision); ok {
			return m, fx, true
		}
	}
	for i := len(b.Decisions) - 1; i >= 0; i-- {
		if d := b.Decisions[i]; d.Seq < o.Seq {
			if m, fx, ok := try(d); ok {
				return m, fx, true
			}
		}
	}
	return c, nil, false
}

// billingOf is the billing currency an orphan is reported in: its tagged
// decision's, else the latest earlier decision's, else its own currency.
func (b *Book) billingOf(o *Orphan) string {
	if o.Decision != nil {
		return o.Decision.Rec.BillingCurrency
	}
	for i := len(b.Decisions) - 1; i >= 0; i-- {
		if b.Decisions[i].Seq < o.Seq {
			return b.Decisions[i].Rec.BillingCurrency
		}
	}
	return o.Release.AccruedCost.Currency
}
