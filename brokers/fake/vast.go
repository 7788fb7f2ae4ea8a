package fake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Vast.ai REST (Authorization: Bearer; providers.md §3):
//
//	PUT    /api/v0/asks/{ask}/                {"client_id":"me","image",…,"label","price"?} → {"success":true,"new_contract":N}
//	GET    /api/v0/instances/                 → {"instances":[{id,label,is_bid,dph_total,actual_status,start_date,num_gpus,…}]}
//	PUT    /api/v0/instances/bid_price/{id}/  {"client_id":"me","price":x} → {"success":true}
//	DELETE /api/v0/instances/{id}/            → {"success":true} (404 {"success":false,"error":"not_found"})
//
// An ask rented WITH a price is an interruptible (bid) contract billed at
// that price per machine-hour; WITHOUT a price it starts on-demand at the
// ask's price (set with SetPrice("vast", "<ask id>", …), default
// DefaultVastPrice) — as on Vast. Vast has no idempotency key: each PUT makes
// a contract. A price below the ask's min bid (the price set for
// "<ask id>:min_bid") is 400 invalid_price. Failures: Capacity → 410 (offer
// gone), Quota → 400 insufficient_credit, Throttle → 429 {"detail":"API
// requests too frequent endpoint threshold=4.5"}.

// DefaultVastPrice is the on-demand price per machine-hour of an ask with none set (USD).
const DefaultVastPrice = "1.600000"

func vastJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func vastFault(w http.ResponseWriter, kind string) bool {
	switch kind {
	case Capacity:
		vastJSON(w, 410, map[string]any{"success": false, "error": "offer_unavailable", "msg": "error 410: this offer is no longer available"})
	case Quota:
		vastJSON(w, 400, map[string]any{"success": false, "error": "insufficient_credit", "msg": "error 400: insufficient credit"})
	case Throttle:
		vastJSON(w, 429, map[string]any{"detail": "API requests too frequent endpoint threshold=4.5"})
	case Unavailable:
		vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_args", "msg": "interruptible instances are not available for this offer"})
	default:
		return false
	}
	return true
}

func vastInstance(i *Instance) map[string]any {
	status := "running"
	if !i.Running() {
		status = "exited"
	}
	ask, _ := strconv.Atoi(i.SKU)
	return map[string]any{"id": mustAtoi(i.ID), "label": i.Name, "is_bid": i.Market == "spot", "dph_total": json.Number(i.Price),
		"actual_status": status, "cur_state": status, "intended_status": status, "start_date": json.Number(strconv.FormatInt(i.LaunchedAt.Unix(), 10) + ".0"),
		"num_gpus": i.GPUs, "ask_id": ask, "machine_id": 1000 + ask, "geolocation": i.Region}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func (s *Server) serveVast(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && r.URL.Query().Get("api_key") == "" {
		vastJSON(w, 401, map[string]any{"success": false, "error": "auth_error", "msg": "Invalid user key"})
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/api/v0/asks/"):
		s.vastCreate(w, r, strings.TrimPrefix(path, "/api/v0/asks/"))
	case r.Method == http.MethodGet && path == "/api/v0/instances":
		s.mu.Lock()
		out := []map[string]any{}
		for _, i := range s.st.Instances {
			if i.Provider == "vast" && i.Running() {
				out = append(out, vastInstance(i))
			}
		}
		s.mu.Unlock()
		vastJSON(w, 200, map[string]any{"instances": out})
	case r.Method == http.MethodPut && strings.HasPrefix(path, "/api/v0/instances/bid_price/"):
		s.vastChangeBid(w, r, strings.TrimPrefix(path, "/api/v0/instances/bid_price/"))
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "/api/v0/instances/"):
		s.vastDestroy(w, r, strings.TrimPrefix(path, "/api/v0/instances/"))
	default:
		vastJSON(w, 404, map[string]any{"success": false, "error": "not_found", "msg": "no such endpoint"})
	}
}

type vastBody struct {
	ClientID string       `json:"client_id"`
	Image    string       `json:"image"`
	Label    string       `json:"label"`
	Price    *json.Number `json:"price"`
	Disk     json.Number  `json:"disk"`
}

func (s *Server) vastCreate(w http.ResponseWriter, r *http.Request, ask string) {
	if _, err := strconv.Atoi(ask); err != nil {
		vastJSON(w, 404, map[string]any{"success": false, "error": "no_such_ask", "msg": "no such ask " + ask})
		return
	}
	var in vastBody
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil || in.Image == "" {
		vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_args", "msg": "image required"})
		return
	}
	s.mu.Lock()
	fault, hit := s.placementFaultLocked("vast", "PUT asks")
	if hit && vastFault(w, fault.Kind) {
		s.mu.Unlock()
		return
	}
	for _, i := range s.st.Instances {
		if i.Provider == "vast" && i.SKU == ask && i.Running() {
			s.mu.Unlock()
			vastFault(w, Capacity) // the ask is rented
			return
		}
	}
	price, ok := s.priceLocked("vast", ask)
	if !ok {
		price = DefaultVastPrice
	}
	i := &Instance{Provider: "vast", SKU: ask, Name: in.Label, Token: in.Label, Currency: "USD", GPUs: 1, Market: "on-demand", Price: price}
	if in.Price != nil {
		b, err := decimal.NewFromString(in.Price.String())
		min, hasMin := s.priceLocked("vast", ask+":min_bid")
		switch {
		case err != nil || b.LessThan(decimal.RequireFromString("0.001")) || b.GreaterThan(decimal.NewFromInt(128)):
			s.mu.Unlock()
			vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_price", "msg": "error 400/3467: price must be between 0.001 and 128"})
			return
		case hasMin && b.LessThan(decimal.RequireFromString(min)):
			s.mu.Unlock()
			vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_price", "msg": "error 400/3467: price below the current min bid " + min})
			return
		}
		i.Market, i.Bid, i.Price = "spot", in.Price.String(), b.String()
	}
	i.Price = priceFor(fault, hit, i.Price)
	s.st.Seq++
	i.ID = strconv.Itoa(1000000 + s.st.Seq)
	s.addLocked(i)
	s.saveLocked()
	id := i.ID
	s.mu.Unlock()
	if hit && fault.Kind == TimeoutAfterCreate {
		s.hang(w, r)
		return
	}
	vastJSON(w, 200, map[string]any{"success": true, "new_contract": json.Number(id)})
}

func (s *Server) vastChangeBid(w http.ResponseWriter, r *http.Request, id string) {
	var in vastBody
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil || in.Price == nil {
		vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_args", "msg": "price required"})
		return
	}
	b, err := decimal.NewFromString(in.Price.String())
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.findLocked("vast", id)
	switch {
	case i == nil || !i.Running():
		vastJSON(w, 404, map[string]any{"success": false, "error": "no_such_instance", "msg": "no such instance"})
		return
	case err != nil || b.LessThan(decimal.RequireFromString("0.001")) || b.GreaterThan(decimal.NewFromInt(int64(32*max(i.GPUs, 1)))):
		vastJSON(w, 400, map[string]any{"success": false, "error": "invalid_price", "msg": "price out of range"})
		return
	}
	i.Bid, i.Price = in.Price.String(), b.String()
	s.saveLocked()
	vastJSON(w, 200, map[string]any{"success": true})
}

func (s *Server) vastDestroy(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	if f, hit := s.takeFaultLocked("vast", "DELETE instances", TerminateTimeout, Throttle); hit {
		s.mu.Unlock()
		if !vastFault(w, f.Kind) {
			s.hang(w, r)
		}
		return
	}
	i := s.findLocked("vast", id)
	if i == nil || !i.Running() {
		s.mu.Unlock()
		vastJSON(w, 404, map[string]any{"success": false, "error": "not_found"})
		return
	}
	s.terminateLocked(i)
	s.saveLocked()
	s.mu.Unlock()
	vastJSON(w, 200, map[string]any{"success": true, "msg": "destroying instance " + id})
}
