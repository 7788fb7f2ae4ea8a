// Package sandbox is the broker for offline runs (`make run`, tests): it
// accepts every plan line, keeps the orders in memory keyed by client token,
// and returns placements with deterministic external ids. The real provider
// adapters live in brokers/<provider>.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// Broker is an in-memory, idempotent sluice.Broker.
type Broker struct {
	// Now stamps placements (default time.Now).
	Now func() time.Time
	// Fail, when set, is asked before each order; a non-nil error refuses it
	// (to exercise partial placement).
	Fail func(provider, offerID string) error

	mu     sync.Mutex
	orders map[string]sluice.Placement
}

// Place buys one line. It is idempotent on the client token derived from
// (decisionID, line): placing the same line again returns the first placement.
// External ids are "sbx-<provider>-<first 8 hex of SHA-256(token)>-<unit>".
// The price read back is the bid for spot lines, else the unit price.
func (b *Broker) Place(ctx context.Context, decisionID string, line int, l sluice.Line) (sluice.Placement, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Placement{}, err
	}
	token := sluice.ClientToken(decisionID, line)
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.orders[token]; ok {
		return p, nil
	}
	if b.Fail != nil {
		if err := b.Fail(l.Provider, l.OfferID); err != nil {
			return sluice.Placement{}, fmt.Errorf("sandbox %s %s: %w", l.Provider, l.OfferID, err)
		}
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	h := sha256.Sum256([]byte(token))
	p := sluice.Placement{
		DecisionID: decisionID, Line: line, Provider: l.Provider, OfferID: l.OfferID, ClientToken: token,
		Market: l.Market, Units: l.Units, Slots: l.Slots, Price: l.UnitPrice, PlacedAt: now().UTC(),
	}
	if l.Bid != nil {
		p.Price = *l.Bid
	}
	for u := range l.Units {
		p.ExternalIDs = append(p.ExternalIDs, fmt.Sprintf("sbx-%s-%s-%d", l.Provider, hex.EncodeToString(h[:4]), u))
	}
	if b.orders == nil {
		b.orders = map[string]sluice.Placement{}
	}
	b.orders[token] = p
	return p, nil
}

// Orders returns how many distinct orders were placed.
func (b *Broker) Orders() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.orders)
}

// Find returns the order placed for (decisionID, line), if any.
func (b *Broker) Find(_ context.Context, _ string, decisionID string, line int) (sluice.Placement, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.orders[sluice.ClientToken(decisionID, line)]
	return p, ok, nil
}

// Release confirms at once.
func (b *Broker) Release(_ context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	return sluice.ReleaseResult{Confirmed: true, At: now().UTC()}, nil
}

// Instances lists the sandbox's orders as instances.
func (b *Broker) Instances(_ context.Context, provider string) ([]sluice.Instance, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []sluice.Instance
	for _, p := range b.orders {
		if p.Provider != provider {
			continue
		}
		for _, id := range p.ExternalIDs {
			out = append(out, sluice.Instance{Provider: p.Provider, ExternalID: id, DecisionID: p.DecisionID,
				Line: p.Line, State: "running", LaunchedAt: p.PlacedAt, Price: p.Price})
		}
	}
	return out, nil
}
