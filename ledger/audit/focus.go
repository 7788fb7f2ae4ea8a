package audit

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sluicehq/sluice"
)

// FOCUSColumns are the columns WriteFOCUS writes, in order: every column
// FOCUS 1.2 makes mandatory (specification/columns @ v1.2; the set is the
// same in 1.0 and 1.1), the conditional ones Sluice can fill
// (PricingCategory, RegionId, ResourceId, SkuId, ListUnitPrice,
// ContractedUnitPrice, the v1.2 PricingCurrency columns), and Sluice's own
// columns with the x_ prefix the spec requires for custom columns
// (attributes/column_handling.md).
var FOCUSColumns = []string{
	"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingCurrency",
	"BillingAccountId", "BillingAccountName", "BillingPeriodStart", "BillingPeriodEnd",
	"ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeClass", "ChargeDescription",
	"PricingQuantity", "PricingUnit", "PricingCategory",
	"ProviderName", "PublisherName", "InvoiceIssuerName", "ServiceCategory", "ServiceName",
	"RegionId", "ResourceId", "SkuId", "ListUnitPrice", "ContractedUnitPrice",
	"PricingCurrency", "PricingCurrencyListUnitPrice", "PricingCurrencyContractedUnitPrice", "PricingCurrencyEffectiveCost",
	"x_DecisionId", "x_PlanLine", "x_PolicyRevision", "x_CodeVersion", "x_ResidencyZone", "x_BudgetTier", "x_Team", "x_Queue",
	"x_BidPrice", "x_DenyReasons", "x_ChargeStatus", "x_FXRate", "x_FXAsOf", "x_FXSource", "x_RecordHash",
}

// FOCUSMandatory are the columns FOCUS 1.2 requires to be present and, except
// BillingAccountName, ChargeClass, ChargeDescription, PricingQuantity and
// PricingUnit (nullable), non-null.
var FOCUSMandatory = []string{
	"BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "BillingCurrency", "BillingAccountId",
	"BillingAccountName", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd",
	"ChargeCategory", "ChargeClass", "ChargeDescription", "PricingQuantity", "PricingUnit", "ProviderName",
	"PublisherName", "InvoiceIssuerName", "ServiceCategory", "ServiceName",
}

// FOCUSNullable are the mandatory columns FOCUS allows to be null.
var FOCUSNullable = []string{"BillingAccountName", "ChargeClass", "ChargeDescription", "PricingQuantity", "PricingUnit"}

// FOCUSTime is the FOCUS date/time format (attributes/datetime_format.md):
// UTC, whole seconds. Rounding point: times are truncated to the second.
const FOCUSTime = "2006-01-02T15:04:05Z"

// Provider names as the providers write them, and their compute services.
var providerNames = map[string][2]string{
	"aws":     {"AWS", "Amazon Elastic Compute Cloud"},
	"aliyun":  {"Alibaba Cloud", "Elastic Compute Service"},
	"runpod":  {"RunPod", "RunPod Pods"},
	"vast":    {"Vast.ai", "Vast.ai Instances"},
	"autodl":  {"AutoDL", "AutoDL Instances"},
	"sandbox": {"Sluice Sandbox", "Sandbox Instances"},
}

// FOCUSOptions are the export's fixed columns.
type FOCUSOptions struct {
	// BillingAccountID and BillingAccountName name the payer (default "sluice").
	BillingAccountID, BillingAccountName string
}

// WriteFOCUS writes the FOCUS rows of every plan line that was bought or is
// planned (failed lines cost nothing and have no row), in chain order, as
// CSV with FOCUSColumns. A line whose charge period runs across the end of a
// UTC month is split into one row per month (splitByMonth: FOCUS wants each
// row's charge period inside its billing period); a row (or part) is written
// when its ChargePeriodStart is in [from, to), so consecutive ranges never
// count a part twice. It returns the number of rows written.
//
// Row rules: ChargePeriod = LineState.Start–End (of the part, when split);
// BillingPeriod = the UTC calendar month of ChargePeriodStart; BilledCost = EffectiveCost =
// LineState.Billed (what the provider bills: the projection, or the accrued
// cost at its billing granularity); PricingUnit "Hours" of one unit (an
// instance, a pod, a Vast offer) and PricingQuantity = units × hours run;
// ListUnitPrice = ContractedUnitPrice = the unit price converted to the
// billing currency (dividing rounds half away from zero to sluice.FXScale
// places; the recorded unit price is the price the capacity was bought at,
// there is no negotiated discount); ListCost = ContractedCost = that unit
// price × PricingQuantity, exact, as FOCUS defines them (they differ from
// BilledCost by the FX rounding, a provider's minimum billed time and a spot
// price that moved); PricingCurrency* carry the offer's own
// currency exactly. ChargeCategory is Purchase for a reservation, else
// Usage; PricingCategory is Dynamic for spot, Standard for on-demand,
// Committed for reserved. ResourceId is the provider's instance ids joined by
// ";". x_ChargeStatus says whether the cost is projected (planned, open) or
// accrued (settled). Settled orphan releases (Book.OrphanCosts: instances
// reconcile terminated with no committed decision) follow the plan lines,
// one row each (split at month end like a line), in chain order (orphanRow). Numbers are plain decimals (decimal.String, never an
// exponent); no currency symbols.
func WriteFOCUS(w io.Writer, book *Book, from, to time.Time, o FOCUSOptions) (int, error) {
	if o.BillingAccountID == "" {
		o.BillingAccountID = "sluice"
	}
	if o.BillingAccountName == "" {
		o.BillingAccountName = o.BillingAccountID
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(FOCUSColumns); err != nil {
		return 0, err
	}
	rows := 0
	for _, d := range book.Decisions {
		rec := &d.Rec
		deny := denyReasons(rec)
		for _, l := range d.Lines {
			if l.State() == LineFailed {
				continue
			}
			start, end := l.Start(), l.End()
			if !overlaps(start, end, from, to) {
				continue
			}
			v, err := focusRow(d, l, deny, o)
			if err != nil {
				return rows, &Problem{Seq: d.Seq, RecordID: d.RecordID, Reason: fmt.Sprintf("line %d: %v", l.Index, err)}
			}
			n, err := writeParts(cw, v, start, end, from, to)
			rows += n
			if err != nil {
				return rows, err
			}
		}
	}
	for _, orph := range book.OrphanCosts {
		start, end := orph.chargePeriod()
		if !overlaps(start, end, from, to) {
			continue
		}
		n, err := writeParts(cw, orphanRow(book, orph, o), start, end, from, to)
		rows += n
		if err != nil {
			return rows, err
		}
	}
	cw.Flush()
	return rows, cw.Error()
}

// chargePeriod of an orphan: the release records when billing stopped (at)
// and the billed seconds, not the launch time, so the period is at −
// billed_seconds → at (the billed time, which includes any granularity or
// minimum the provider rounded up to).
func (o *Orphan) chargePeriod() (start, end time.Time) {
	end = o.Release.At.UTC()
	return end.Add(-time.Duration(o.Release.BilledSeconds) * time.Second), end
}

// orphanRow is the FOCUS row of an orphan's cost (Orphan): BilledCost =
// EffectiveCost = ListCost = ContractedCost = the accrued cost in the
// billing currency (Book.orphanBilled; no list price is recorded for an
// instance no decision planned, so the list columns repeat what was billed
// and ListUnitPrice/ContractedUnitPrice are empty); PricingQuantity = 1
// instance × billed seconds ÷ 3600, rounded half away from zero to 6 places
// (HoursPlaces); x_DecisionId and x_PlanLine are the tag the instance
// carried; tier, team and queue are the tagged decision's when the chain
// holds it; x_ChargeStatus "orphan".
func orphanRow(book *Book, o *Orphan, opt FOCUSOptions) map[string]string {
	rel := o.Release
	billing := book.billingOf(o)
	cost, fx, ok := book.orphanBilled(o, billing)
	if !ok {
		billing = cost.Currency
	}
	start, end := o.chargePeriod()
	period := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	names, known := providerNames[rel.Provider]
	if !known {
		names = [2]string{rel.Provider, rel.Provider}
	}
	line := ""
	if o.TagLine >= 0 && o.Tag != "" {
		line = fmt.Sprint(o.TagLine)
	}
	var tier, team, queue, policy, code, zone string
	if d := o.Decision; d != nil {
		tier, team, queue, policy, code = string(d.Rec.Profile.Tier), d.Rec.Profile.Team, d.Rec.Trigger.Queue, d.Rec.PolicyRevision, d.Rec.CodeVersion
		if o.TagLine >= 0 && o.TagLine < len(d.Rec.Lines) {
			zone = string(d.Rec.Lines[o.TagLine].Zone)
		}
	}
	var fxRate, fxAsOf, fxSource string
	if fx != nil {
		fxRate, fxAsOf, fxSource = fx.Base+"/"+fx.Quote+"="+fx.Rate.String(), fx.AsOf.UTC().Format(FOCUSTime), fx.Source
	}
	tag := o.Tag
	if tag == "" {
		tag = "(untagged)"
	}
	desc := fmt.Sprintf("orphan instance %s at %s (tagged decision %s line %s), terminated by reconcile: %s",
		strings.Join(rel.ExternalIDs, ";"), rel.Provider, tag, line, rel.Reason)
	qty := decimal.NewFromInt(rel.BilledSeconds).DivRound(decimal.NewFromInt(3600), HoursPlaces)
	v := map[string]string{
		"BilledCost": cost.Amount.String(), "EffectiveCost": cost.Amount.String(), "ListCost": cost.Amount.String(),
		"ContractedCost": cost.Amount.String(), "BillingCurrency": billing,
		"BillingAccountId": opt.BillingAccountID, "BillingAccountName": opt.BillingAccountName,
		"BillingPeriodStart": period.Format(FOCUSTime), "BillingPeriodEnd": period.AddDate(0, 1, 0).Format(FOCUSTime),
		"ChargePeriodStart": start.Format(FOCUSTime), "ChargePeriodEnd": end.Format(FOCUSTime),
		"ChargeCategory": "Usage", "ChargeClass": "", "ChargeDescription": desc,
		"PricingQuantity": qty.String(), "PricingUnit": "Hours",
		"ProviderName": names[0], "PublisherName": names[0], "InvoiceIssuerName": names[0],
		"ServiceCategory": "Compute", "ServiceName": names[1], "ResourceId": strings.Join(rel.ExternalIDs, ";"),
		"PricingCurrency": rel.AccruedCost.Currency, "PricingCurrencyEffectiveCost": rel.AccruedCost.Amount.String(),
		"x_DecisionId": o.Tag, "x_PlanLine": line, "x_PolicyRevision": policy, "x_CodeVersion": code,
		"x_ResidencyZone": zone, "x_BudgetTier": tier, "x_Team": team, "x_Queue": queue,
		"x_ChargeStatus": "orphan", "x_FXRate": fxRate, "x_FXAsOf": fxAsOf, "x_FXSource": fxSource, "x_RecordHash": o.Hash,
	}
	return v
}

func focusRow(d *Decision, l *LineState, deny string, o FOCUSOptions) (map[string]string, error) {
	rec := &d.Rec
	billing := rec.BillingCurrency
	cost, err := l.Billed()
	if err != nil {
		return nil, err
	}
	unitBilling, err := toBilling(l.Line.UnitPrice, l.Line, billing)
	if err != nil {
		return nil, err
	}
	start, end := l.Start(), l.End()
	period := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	qty := l.UnitHours()
	listCost := unitBilling.Amount.Mul(qty) // FOCUS: ListUnitPrice × PricingQuantity
	names, ok := providerNames[l.Line.Provider]
	if !ok {
		names = [2]string{l.Line.Provider, l.Line.Provider}
	}
	chargeCat, pricingCat := "Usage", "Standard"
	switch l.Line.Market {
	case sluice.Spot:
		pricingCat = "Dynamic"
	case sluice.Reserved:
		chargeCat, pricingCat = "Purchase", "Committed"
	}
	status := "projected"
	if l.State() == LineSettled {
		status = "accrued"
	}
	var resource, bid string
	if l.Placement != nil {
		resource = strings.Join(l.Placement.ExternalIDs, ";")
	}
	if l.Line.Bid != nil {
		bid = l.Line.Bid.Amount.String()
	}
	var fxRate, fxAsOf, fxSource string
	if fx := l.Line.FX; fx != nil {
		fxRate, fxAsOf, fxSource = fx.Base+"/"+fx.Quote+"="+fx.Rate.String(), fx.AsOf.UTC().Format(FOCUSTime), fx.Source
	}
	pricingCost := l.Line.BaseCost
	if l.State() == LineSettled && l.Final.AccruedCost.IsSet() {
		pricingCost = l.Final.AccruedCost
	}
	desc := fmt.Sprintf("%d × %s %s %s (%d GPUs %s) for queue %s", l.Line.Units, l.Line.Provider, l.Line.SKU,
		l.Line.Market, l.Line.GPUs, l.Line.GPUModel, rec.Trigger.Queue)
	v := map[string]string{
		"BilledCost": cost.Amount.String(), "EffectiveCost": cost.Amount.String(), "ListCost": listCost.String(),
		"ContractedCost": listCost.String(), "BillingCurrency": billing,
		"BillingAccountId": o.BillingAccountID, "BillingAccountName": o.BillingAccountName,
		"BillingPeriodStart": period.Format(FOCUSTime), "BillingPeriodEnd": period.AddDate(0, 1, 0).Format(FOCUSTime),
		"ChargePeriodStart": start.Format(FOCUSTime), "ChargePeriodEnd": end.Format(FOCUSTime),
		"ChargeCategory": chargeCat, "ChargeClass": "", "ChargeDescription": desc,
		"PricingQuantity": qty.String(), "PricingUnit": "Hours", "PricingCategory": pricingCat,
		"ProviderName": names[0], "PublisherName": names[0], "InvoiceIssuerName": names[0],
		"ServiceCategory": "Compute", "ServiceName": names[1],
		"RegionId": l.Line.Region, "ResourceId": resource, "SkuId": l.Line.SKU,
		"ListUnitPrice": unitBilling.Amount.String(), "ContractedUnitPrice": unitBilling.Amount.String(),
		"PricingCurrency": l.Line.UnitPrice.Currency, "PricingCurrencyListUnitPrice": l.Line.UnitPrice.Amount.String(),
		"PricingCurrencyContractedUnitPrice": l.Line.UnitPrice.Amount.String(), "PricingCurrencyEffectiveCost": pricingCost.Amount.String(),
		"x_DecisionId": rec.DecisionID, "x_PlanLine": fmt.Sprint(l.Index), "x_PolicyRevision": rec.PolicyRevision,
		"x_CodeVersion": rec.CodeVersion, "x_ResidencyZone": string(l.Line.Zone), "x_BudgetTier": string(rec.Profile.Tier),
		"x_Team": rec.Profile.Team, "x_Queue": rec.Trigger.Queue, "x_BidPrice": bid, "x_DenyReasons": deny,
		"x_ChargeStatus": status, "x_FXRate": fxRate, "x_FXAsOf": fxAsOf, "x_FXSource": fxSource, "x_RecordHash": rec.Hash,
	}
	return v, nil
}

// denyReasons summarises why the decision's other offers were refused:
// "code=count" pairs sorted by code, joined by ";" (e.g. "price=2;residency=5").
func denyReasons(rec *sluice.DecisionRecord) string {
	counts := map[string]int{}
	for _, r := range rec.Rejected {
		seen := map[string]bool{}
		for _, why := range r.Reasons {
			if !seen[why.Code] {
				seen[why.Code] = true
				counts[why.Code]++
			}
		}
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", c, counts[c]))
	}
	return strings.Join(parts, ";")
}
