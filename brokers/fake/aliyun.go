package fake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Alibaba ECS RPC (API 2014-05-26, V3 signature, parameters in the query,
// JSON answers; providers.md §5). Operations: RunInstances (ClientToken
// idempotent, SpotStrategy NoSpot|SpotWithPriceLimit, SpotPriceLimit ≤ 3
// decimals, Amount, Tag.N.Key/Value), DescribeInstances (InstanceIds JSON
// list, Tag.N.Key/Value), DeleteInstances (InstanceId.N, Force), and
// DescribeSpotPriceHistory (the zone's current spot price).
//
// Failures: {"RequestId","HostId","Code","Message"} — Capacity →
// OperationDenied.NoStock (403), Quota → QuotaExceed.PostPaidInstance (403),
// Throttle → Throttling.User (400), a SpotPriceLimit with more than 3
// decimals → InvalidSpotPriceLimit.Malformed (400), a limit under the spot
// price → InvalidSpotPriceLimit.LowerThanPublicPrice (400).

// DefaultAliyunPrice is the spot price of a type with none set (CNY per instance-hour).
const DefaultAliyunPrice = "30.5"

func aliyunJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func aliyunError(w http.ResponseWriter, status int, code, msg string) {
	aliyunJSON(w, status, map[string]string{"RequestId": "fake-req", "HostId": "ecs.aliyuncs.com", "Code": code, "Message": msg,
		"Recommend": "https://api.aliyun.com/troubleshoot?q=" + code})
}

// aliyunFaults are the answers aliyunFault gives to the faults it is told to make.
var aliyunFaults = map[string]faultAnswer{
	Capacity:    {403, "OperationDenied.NoStock", "Sales of this resource are temporarily suspended in the specified region."},
	Quota:       {403, "QuotaExceed.PostPaidInstance", "Living instances quota exceeded."},
	Throttle:    {400, "Throttling.User", "Request was denied due to user flow control."},
	Unavailable: {400, "InvalidSpotStrategy.NotSupported", "The specified SpotStrategy is not supported."},
}

func aliyunFault(w http.ResponseWriter, kind string) bool {
	return answerFault(w, kind, aliyunFaults, aliyunError)
}

func aliyunTags(q map[string][]string) map[string]string {
	tags := map[string]string{}
	for n := 1; n <= 20; n++ {
		k := "Tag." + strconv.Itoa(n)
		key := first(q[k+".Key"])
		if key == "" {
			break
		}
		tags[key] = first(q[k+".Value"])
	}
	return tags
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func aliyunInstance(i *Instance) map[string]any {
	var tags []map[string]string
	for _, k := range sortedKeys(i.Tags) {
		tags = append(tags, map[string]string{"TagKey": k, "TagValue": i.Tags[k]})
	}
	status := "Running"
	if !i.Running() {
		status = "Stopped"
	}
	strategy := "NoSpot"
	m := map[string]any{"InstanceId": i.ID, "InstanceName": i.Name, "InstanceType": i.SKU, "RegionId": i.Region, "ZoneId": i.Zone, "Status": status,
		"InstanceChargeType": "PostPaid", "CreationTime": i.LaunchedAt.Format("2006-01-02T15:04Z"), "Tags": map[string]any{"Tag": tags}}
	if i.Market == "spot" {
		strategy = "SpotWithPriceLimit"
		m["SpotPriceLimit"] = json.Number(i.Bid)
	}
	m["SpotStrategy"] = strategy
	return m
}

func (s *Server) serveAliyun(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "ACS3-HMAC-SHA256 ") || r.Header.Get("x-acs-version") != "2014-05-26" {
		aliyunError(w, 401, "IncompleteSignature", "The request signature does not conform to Aliyun standards.")
		return
	}
	q := r.URL.Query()
	switch r.Header.Get("x-acs-action") {
	case "RunInstances":
		s.aliyunRun(w, r, q)
	case "DescribeInstances":
		s.aliyunDescribe(w, q)
	case "DeleteInstances":
		s.aliyunDelete(w, r, q)
	case "DescribeSpotPriceHistory":
		s.aliyunSpotPrice(w, q)
	default:
		aliyunError(w, 404, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
	}
}

func (s *Server) aliyunRun(w http.ResponseWriter, r *http.Request, q map[string][]string) {
	typ, zone, token := first(q["InstanceType"]), first(q["ZoneId"]), first(q["ClientToken"])
	amount, _ := strconv.Atoi(first(q["Amount"]))
	if amount == 0 {
		amount = 1
	}
	if typ == "" || first(q["RegionId"]) == "" || first(q["ImageId"]) == "" || amount < 1 || amount > 100 {
		aliyunError(w, 400, "MissingParameter", "RegionId, InstanceType, ImageId and 1 ≤ Amount ≤ 100 are required")
		return
	}
	s.mu.Lock()
	if token != "" {
		if existing := s.byTokenLocked("aliyun", token); len(existing) > 0 {
			var ids []string
			for _, i := range existing {
				ids = append(ids, i.ID)
			}
			s.mu.Unlock()
			aliyunJSON(w, 200, map[string]any{"RequestId": "fake-req", "InstanceIdSet": map[string]any{"InstanceIdSets": ids}})
			return
		}
	}
	fault, hit := s.placementFaultLocked("aliyun", "RunInstances")
	if hit && aliyunFault(w, fault.Kind) {
		s.mu.Unlock()
		return
	}
	market := "on-demand"
	price, ok := s.priceLocked("aliyun", typ)
	if !ok {
		price = DefaultAliyunPrice
	}
	limit := ""
	switch first(q["SpotStrategy"]) {
	case "SpotWithPriceLimit":
		market, limit = "spot", first(q["SpotPriceLimit"])
		d, err := decimal.NewFromString(limit)
		switch {
		case err != nil || !d.IsPositive() || d.Exponent() < -3 && !d.Equal(d.Truncate(3)):
			s.mu.Unlock()
			aliyunError(w, 400, "InvalidSpotPriceLimit.Malformed", "The specified SpotPriceLimit "+limit+" is not valid: at most 3 decimals.")
			return
		case d.LessThan(decimal.RequireFromString(price)):
			s.mu.Unlock()
			aliyunError(w, 400, "InvalidSpotPriceLimit.LowerThanPublicPrice", "The specified parameter spotPriceLimit can't be lower than current public price.")
			return
		}
	case "", "NoSpot":
		if p, ok := s.priceLocked("aliyun", typ+":on-demand"); ok {
			price = p
		} else {
			price = "34.7"
		}
	default:
		s.mu.Unlock()
		aliyunError(w, 400, "InvalidSpotStrategy.Malformed", "SpotStrategy")
		return
	}
	if hit && fault.Kind == Price {
		if s.st.Prices == nil {
			s.st.Prices = map[string]map[string]string{}
		}
		s.st.Prices["aliyun"] = mapWith(s.st.Prices["aliyun"], typ, fault.Price)
	}
	group := s.nextIDLocked("order-")
	var ids []string
	for range amount {
		i := &Instance{Provider: "aliyun", ID: s.nextIDLocked("i-bp"), Token: token, Name: first(q["InstanceName"]), Tags: aliyunTags(q),
			Market: market, SKU: typ, Region: first(q["RegionId"]), Zone: zone, Bid: limit, Price: priceFor(fault, hit, price), Currency: "CNY", Group: group}
		s.addLocked(i)
		ids = append(ids, i.ID)
	}
	s.saveLocked()
	s.mu.Unlock()
	if hit && fault.Kind == TimeoutAfterCreate {
		s.hang(w, r)
		return
	}
	aliyunJSON(w, 200, map[string]any{"RequestId": "fake-req", "InstanceIdSet": map[string]any{"InstanceIdSets": ids}, "OrderId": group})
}

func (s *Server) aliyunDescribe(w http.ResponseWriter, q map[string][]string) {
	var ids []string
	if v := first(q["InstanceIds"]); v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			aliyunError(w, 400, "InvalidParameter", "InstanceIds: want a JSON list")
			return
		}
	}
	want := aliyunTags(q)
	region := first(q["RegionId"])
	s.mu.Lock()
	var out []map[string]any
	for _, i := range s.st.Instances {
		if i.Provider != "aliyun" || !i.Running() || i.Region != region { // deleted instances are gone from ECS
			continue
		}
		if len(ids) > 0 && !contains(ids, i.ID) {
			continue
		}
		ok := true
		for k, v := range want {
			if got, has := i.Tags[k]; !has || (v != "" && got != v) {
				ok = false
			}
		}
		if ok {
			out = append(out, aliyunInstance(i))
		}
	}
	s.mu.Unlock()
	if out == nil {
		out = []map[string]any{}
	}
	aliyunJSON(w, 200, map[string]any{"RequestId": "fake-req", "TotalCount": len(out), "PageNumber": 1, "PageSize": 100,
		"Instances": map[string]any{"Instance": out}})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) aliyunDelete(w http.ResponseWriter, r *http.Request, q map[string][]string) {
	var ids []string
	for n := 1; ; n++ {
		id := first(q["InstanceId."+strconv.Itoa(n)])
		if id == "" {
			break
		}
		ids = append(ids, id)
	}
	s.mu.Lock()
	if f, hit := s.takeFaultLocked("aliyun", "DeleteInstances", TerminateTimeout, Throttle); hit {
		s.mu.Unlock()
		if !aliyunFault(w, f.Kind) {
			s.hang(w, r)
		}
		return
	}
	for _, id := range ids {
		i := s.findLocked("aliyun", id)
		if i == nil || !i.Running() || i.Region != first(q["RegionId"]) {
			s.mu.Unlock()
			aliyunError(w, 404, "InvalidInstanceId.NotFound", "The specified InstanceId does not exist.")
			return
		}
	}
	for _, id := range ids {
		s.terminateLocked(s.findLocked("aliyun", id))
	}
	s.saveLocked()
	s.mu.Unlock()
	aliyunJSON(w, 200, map[string]any{"RequestId": "fake-req"})
}

func (s *Server) aliyunSpotPrice(w http.ResponseWriter, q map[string][]string) {
	typ, zone := first(q["InstanceType"]), first(q["ZoneId"])
	s.mu.Lock()
	p, ok := s.priceLocked("aliyun", typ)
	now := s.now()
	s.mu.Unlock()
	if !ok {
		p = DefaultAliyunPrice
	}
	aliyunJSON(w, 200, map[string]any{"RequestId": "fake-req", "Currency": "CNY", "NextOffset": 0,
		"SpotPrices": map[string]any{"SpotPriceType": []map[string]any{{"ZoneId": zone, "InstanceType": typ, "IoOptimized": "optimized",
			"NetworkType": "vpc", "Timestamp": now.Format("2006-01-02T15:04:05Z"), "SpotPrice": json.Number(p), "OriginPrice": json.Number("34.7")}}}})
}
