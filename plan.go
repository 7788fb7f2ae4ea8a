package sluice

import (
	"github.com/shopspring/decimal"
)

// Line is one chosen purchase: Units units of one offer.
type Line struct {
	OfferID  string `json:"offer_id"`
	Provider string `json:"provider"`
	SKU      string `json:"sku"`
	Region   string `json:"region"`
	Zone     Zone   `json:"zone"`
	Market   Market `json:"market"`
	GPUModel string `json:"gpu_model"`
	Units    int    `json:"units"`
	// GPUs = Units × GPUsPerUnit; Slots = Units × (GPUsPerUnit / GPUsPerSlot).
	GPUs  int `json:"gpus"`
	Slots int `json:"slots"`
	// UnitPrice is per unit-hour in the offer's currency.
	UnitPrice Money `json:"unit_price"`
	// Bid is the bid per unit-hour for spot lines (offer currency), null otherwise.
	Bid *Money `json:"bid"`
	// Hours billed per unit: the slot hours, or the whole term for a reservation.
	Hours decimal.Decimal `json:"hours"`
	// BaseCost = UnitPrice × Units × Hours (exact, offer currency).
	BaseCost Money `json:"base_cost"`
	// ReworkCost is the expected cost of redoing work lost to interruptions
	// (spot only): rate × Hours × (checkpoint interval / 2) × UnitPrice × Units.
	ReworkCost Money `json:"rework_cost"`
	// ExpectedCost = BaseCost + ReworkCost, in the offer's currency.
	ExpectedCost Money `json:"expected_cost"`
	// ExpectedCostBilling is ExpectedCost in the billing currency: the per-unit
	// expected cost converted at FX (rounded to FXScale places when dividing),
	// times Units.
	ExpectedCostBilling Money `json:"expected_cost_billing"`
	// FX is the rate used for ExpectedCostBilling (null when none was needed).
	FX *FXRate `json:"fx_rate"`
}

// Rejection is an offer that cannot be part of the plan, with every reason.
type Rejection struct {
	Provider string   `json:"provider"`
	OfferID  string   `json:"offer_id"`
	Reasons  []Reason `json:"reasons"`
}

// Plan is the result of MakePlan: chosen lines covering the demand at least
// expected cost, plus every rejected offer with its reasons. It is a value: no I/O.
type Plan struct {
	Lines []Line `json:"lines"`
	// SlotsWanted is the demand; SlotsCovered what the lines cover.
	SlotsWanted  int `json:"slots_wanted"`
	SlotsCovered int `json:"slots_covered"`
	// Short says why SlotsCovered < SlotsWanted (codes "budget" or "capacity").
	Short             []Reason    `json:"short"`
	TotalExpectedCost Money       `json:"total_expected_cost"`
	Rejected          []Rejection `json:"rejected"`
}
