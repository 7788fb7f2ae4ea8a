package fake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// EC2 Query API (Action=…&Version=2016-11-15, form-encoded POST, XML answers;
// providers.md §1.1, §1.3, §1.4). Operations: RunInstances (ClientToken
// idempotent, spot MaxPrice, capacity-block market, TagSpecification),
// DescribeInstances (InstanceId.N, Filter.N: client-token, tag:<key>,
// tag-key, instance-state-name), TerminateInstances, DescribeSpotPriceHistory
// (the current market price of an instance type), PurchaseCapacityBlock and
// DescribeCapacityReservations (Filter tag:<key>).
//
// Failures use the EC2 error document
// <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>:
// Capacity → InsufficientInstanceCapacity (400), Quota →
// InstanceLimitExceeded (400), Throttle → RequestLimitExceeded (503). A spot
// MaxPrice ≤ 0.001 is InvalidParameterValue (400), a MaxPrice below the
// market price SpotMaxPriceTooLow (400).

const ec2NS = "http://ec2.amazonaws.com/doc/2016-11-15/"

const ec2Time = "2006-01-02T15:04:05.000Z"

// DefaultEC2Price is the spot market price of a type with none set (USD per instance-hour).
const DefaultEC2Price = "12.000000"

func ec2Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>fake-req</RequestID></Response>`, code, xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func ec2OK(w http.ResponseWriter, action, body string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<%sResponse xmlns="%s"><requestId>fake-req</requestId>%s</%sResponse>`, action, ec2NS, body, action)
}

// indexed collects form values "<prefix>.<n>[.<suffix>]" by n (1-based, in order).
func indexed(form url.Values, prefix string) []string {
	var out []string
	for n := 1; ; n++ {
		k := prefix + "." + strconv.Itoa(n)
		found := false
		for key := range form {
			if key == k || strings.HasPrefix(key, k+".") {
				found = true
				break
			}
		}
		if !found {
			return out
		}
		out = append(out, k)
	}
}

// tagSpecs reads TagSpecification.N.ResourceType / .Tag.M.Key/Value for resourceType.
func tagSpecs(form url.Values, resourceType string) map[string]string {
	tags := map[string]string{}
	for _, spec := range indexed(form, "TagSpecification") {
		if rt := form.Get(spec + ".ResourceType"); rt != "" && rt != resourceType {
			continue
		}
		for _, tag := range indexed(form, spec+".Tag") {
			tags[form.Get(tag+".Key")] = form.Get(tag + ".Value")
		}
	}
	return tags
}

type ec2Filter struct {
	Name   string
	Values []string
}

func ec2Filters(form url.Values) []ec2Filter {
	var out []ec2Filter
	for _, f := range indexed(form, "Filter") {
		flt := ec2Filter{Name: form.Get(f + ".Name")}
		for _, v := range indexed(form, f+".Value") {
			flt.Values = append(flt.Values, form.Get(v))
		}
		out = append(out, flt)
	}
	return out
}

func matchFilters(filters []ec2Filter, token, state string, tags map[string]string) bool {
	for _, f := range filters {
		var have []string
		switch {
		case f.Name == "client-token":
			have = []string{token}
		case f.Name == "instance-state-name" || f.Name == "state":
			have = []string{state}
		case f.Name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]; ok {
				have = []string{v}
			}
		default:
			return false
		}
		ok := false
		for _, h := range have {
			for _, v := range f.Values {
				if h == v {
					ok = true
				}
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func tagSetXML(tags map[string]string) string {
	var b strings.Builder
	b.WriteString("<tagSet>")
	for _, k := range sortedKeys(tags) {
		fmt.Fprintf(&b, "<item><key>%s</key><value>%s</value></item>", xmlEscape(k), xmlEscape(tags[k]))
	}
	b.WriteString("</tagSet>")
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func ec2StateXML(tag, state string) string {
	code := 16
	switch state {
	case "terminated":
		code = 48
	case "shutting-down":
		code = 32
	}
	return fmt.Sprintf("<%s><code>%d</code><name>%s</name></%s>", tag, code, state, tag)
}

func ec2InstanceXML(i *Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<item><instanceId>%s</instanceId><imageId>ami-fake</imageId>%s<instanceType>%s</instanceType>",
		i.ID, ec2StateXML("instanceState", i.State), xmlEscape(i.SKU))
	fmt.Fprintf(&b, "<launchTime>%s</launchTime><placement><availabilityZone>%s</availabilityZone></placement>",
		i.LaunchedAt.Format(ec2Time), xmlEscape(i.Region))
	if i.Token != "" {
		fmt.Fprintf(&b, "<clientToken>%s</clientToken>", xmlEscape(i.Token))
	}
	switch i.Market {
	case "spot":
		fmt.Fprintf(&b, "<instanceLifecycle>spot</instanceLifecycle><spotInstanceRequestId>sir-%s</spotInstanceRequestId>", strings.TrimPrefix(i.ID, "i-"))
	case "capacity-block":
		fmt.Fprintf(&b, "<instanceLifecycle>capacity-block</instanceLifecycle><capacityReservationId>%s</capacityReservationId>", i.Group)
	}
	b.WriteString(tagSetXML(i.Tags))
	b.WriteString("</item>")
	return b.String()
}

// sigRegion is the region of a SigV4 request (the credential scope
// "Credential=AKID/<date>/<region>/ec2/aws4_request"), "" when absent.
func sigRegion(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	parts := strings.Split(cred, "/")
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// azRegion is the region of an availability zone ("us-east-1a" → "us-east-1").
func azRegion(az string) string { return strings.TrimRight(az, "abcdefghijklmnopqrstuvwxyz") }

func (s *Server) serveEC2(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		ec2Error(w, 400, "MalformedQueryString", err.Error())
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		ec2Error(w, 401, "AuthFailure", "AWS was not able to validate the provided access credentials")
		return
	}
	action := r.Form.Get("Action")
	switch action {
	case "RunInstances":
		s.ec2Run(w, r)
	case "DescribeInstances":
		s.ec2Describe(w, r)
	case "TerminateInstances":
		s.ec2Terminate(w, r)
	case "DescribeSpotPriceHistory":
		s.ec2SpotPrice(w, r)
	case "PurchaseCapacityBlock":
		s.ec2Purchase(w, r)
	case "DescribeCapacityReservations":
		s.ec2DescribeReservations(w, r)
	default:
		ec2Error(w, 400, "InvalidAction", "The action "+action+" is not valid for this web service.")
	}
}

// ec2FaultsError are the answers ec2FaultError gives to the faults it is told to make.
var ec2FaultsError = map[string]faultAnswer{
	Capacity:    {500, "InsufficientInstanceCapacity", "We currently do not have sufficient capacity in the Availability Zone you requested."},
	Quota:       {400, "InstanceLimitExceeded", "You have requested more instances than your current instance limit allows."},
	Throttle:    {503, "RequestLimitExceeded", "Request limit exceeded."},
	Unavailable: {400, "Unsupported", "The requested configuration is currently not supported."},
}

func ec2FaultError(w http.ResponseWriter, kind string) bool {
	return answerFault(w, kind, ec2FaultsError, ec2Error)
}

func (s *Server) ec2Run(w http.ResponseWriter, r *http.Request) {
	f := r.Form
	token := f.Get("ClientToken")
	typ := f.Get("InstanceType")
	count, _ := strconv.Atoi(f.Get("MaxCount"))
	if typ == "" || count < 1 || f.Get("ImageId") == "" {
		ec2Error(w, 400, "MissingParameter", "InstanceType, ImageId and MaxCount ≥ 1 are required")
		return
	}
	if len(token) > 64 {
		ec2Error(w, 400, "InvalidParameterValue", "ClientToken longer than 64 characters")
		return
	}
	s.mu.Lock()
	if token != "" {
		if existing := s.byTokenLocked("aws", token); len(existing) > 0 {
			// Idempotent: the same token returns the first call's instances.
			var b strings.Builder
			fmt.Fprintf(&b, "<reservationId>%s</reservationId><ownerId>000000000000</ownerId><instancesSet>", existing[0].Group)
			for _, i := range existing {
				b.WriteString(ec2InstanceXML(i))
			}
			b.WriteString("</instancesSet>")
			s.mu.Unlock()
			ec2OK(w, "RunInstances", b.String())
			return
		}
	}
	fault, hit := s.placementFaultLocked("aws", "RunInstances")
	if hit && ec2FaultError(w, fault.Kind) {
		s.mu.Unlock()
		return
	}
	market := f.Get("InstanceMarketOptions.MarketType")
	az := f.Get("Placement.AvailabilityZone")
	if az == "" {
		az = sigRegion(r) + "a"
	}
	price, ok := s.priceLocked("aws", typ)
	if !ok {
		price = DefaultEC2Price
	}
	inst := Instance{Provider: "aws", Token: token, SKU: typ, Region: az, Currency: "USD", Market: "on-demand", GPUs: 8}
	switch market {
	case "spot":
		maxPrice := f.Get("InstanceMarketOptions.SpotOptions.MaxPrice")
		inst.Market, inst.Bid = "spot", maxPrice
		if maxPrice != "" {
			mp, err := decimal.NewFromString(maxPrice)
			switch {
			case err != nil || !mp.GreaterThan(decimal.RequireFromString("0.001")):
				s.mu.Unlock()
				ec2Error(w, 400, "InvalidParameterValue", "Value ("+maxPrice+") for parameter MaxPrice is invalid. MaxPrice must be greater than 0.001.")
				return
			case mp.LessThan(decimal.RequireFromString(price)):
				s.mu.Unlock()
				ec2Error(w, 400, "SpotMaxPriceTooLow", "Your Spot request price of "+maxPrice+" is lower than the minimum required Spot request fulfillment price of "+price+".")
				return
			}
		}
	case "capacity-block":
		cr := f.Get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
		var res *Reservation
		for _, x := range s.st.Reservations {
			if x.ID == cr {
				res = x
			}
		}
		if res == nil {
			s.mu.Unlock()
			ec2Error(w, 400, "InvalidCapacityReservationId.NotFound", "The capacity reservation "+cr+" does not exist")
			return
		}
		inst.Market, inst.Group, inst.Region = "capacity-block", res.ID, res.AZ
		price = "0" // paid up front with the block
	case "":
		if p, ok := s.priceLocked("aws", typ+":on-demand"); ok {
			price = p
		} else {
			price = "32.772600"
		}
	default:
		s.mu.Unlock()
		ec2Error(w, 400, "InvalidParameterValue", "MarketType "+market)
		return
	}
	if hit && fault.Kind == Price {
		if s.st.Prices == nil {
			s.st.Prices = map[string]map[string]string{}
		}
		s.st.Prices["aws"] = mapWith(s.st.Prices["aws"], typ, fault.Price)
	}
	inst.Price = priceFor(fault, hit, price)
	inst.Tags = tagSpecs(f, "instance")
	group := inst.Group
	if group == "" {
		group = s.nextIDLocked("r-")
	}
	var made []*Instance
	for range count {
		i := inst
		i.ID = s.nextIDLocked("i-")
		i.Group = group
		if inst.Market == "capacity-block" {
			i.Group = inst.Group
		}
		s.addLocked(&i)
		made = append(made, &i)
	}
	s.saveLocked()
	var b strings.Builder
	fmt.Fprintf(&b, "<reservationId>%s</reservationId><ownerId>000000000000</ownerId><instancesSet>", group)
	for _, i := range made {
		b.WriteString(ec2InstanceXML(i))
	}
	b.WriteString("</instancesSet>")
	s.mu.Unlock()
	if hit && fault.Kind == TimeoutAfterCreate {
		s.hang(w, r)
		return
	}
	ec2OK(w, "RunInstances", b.String())
}

func mapWith(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func (s *Server) ec2Describe(w http.ResponseWriter, r *http.Request) {
	ids := map[string]bool{}
	for _, k := range indexed(r.Form, "InstanceId") {
		ids[r.Form.Get(k)] = true
	}
	filters := ec2Filters(r.Form)
	region := sigRegion(r)
	s.mu.Lock()
	groups := map[string][]*Instance{}
	var order []string
	for _, i := range s.st.Instances {
		if i.Provider != "aws" || azRegion(i.Region) != region || (len(ids) > 0 && !ids[i.ID]) || !matchFilters(filters, i.Token, i.State, i.Tags) {
			continue
		}
		if _, ok := groups[i.Group]; !ok {
			order = append(order, i.Group)
		}
		groups[i.Group] = append(groups[i.Group], i)
	}
	var b strings.Builder
	b.WriteString("<reservationSet>")
	for _, g := range order {
		fmt.Fprintf(&b, "<item><reservationId>%s</reservationId><ownerId>000000000000</ownerId><instancesSet>", g)
		for _, i := range groups[g] {
			b.WriteString(ec2InstanceXML(i))
		}
		b.WriteString("</instancesSet></item>")
	}
	b.WriteString("</reservationSet>")
	s.mu.Unlock()
	ec2OK(w, "DescribeInstances", b.String())
}

func (s *Server) ec2Terminate(w http.ResponseWriter, r *http.Request) {
	var ids []string
	for _, k := range indexed(r.Form, "InstanceId") {
		ids = append(ids, r.Form.Get(k))
	}
	s.mu.Lock()
	if f, hit := s.takeFaultLocked("aws", "TerminateInstances", TerminateTimeout, Throttle); hit {
		s.mu.Unlock()
		if f.Kind == Throttle {
			ec2FaultError(w, Throttle)
			return
		}
		s.hang(w, r)
		return
	}
	var b strings.Builder
	b.WriteString("<instancesSet>")
	for _, id := range ids {
		i := s.findLocked("aws", id)
		if i == nil || azRegion(i.Region) != sigRegion(r) {
			s.mu.Unlock()
			ec2Error(w, 400, "InvalidInstanceID.NotFound", "The instance ID '"+id+"' does not exist")
			return
		}
		prev := i.State
		s.terminateLocked(i)
		fmt.Fprintf(&b, "<item><instanceId>%s</instanceId>%s%s</item>", id, ec2StateXML("currentState", i.State), ec2StateXML("previousState", prev))
	}
	b.WriteString("</instancesSet>")
	s.saveLocked()
	s.mu.Unlock()
	ec2OK(w, "TerminateInstances", b.String())
}

func (s *Server) ec2SpotPrice(w http.ResponseWriter, r *http.Request) {
	az := r.Form.Get("AvailabilityZone")
	if az == "" {
		az = "us-east-1a"
	}
	s.mu.Lock()
	var b strings.Builder
	b.WriteString("<spotPriceHistorySet>")
	for _, k := range indexed(r.Form, "InstanceType") {
		typ := r.Form.Get(k)
		p, ok := s.priceLocked("aws", typ)
		if !ok {
			p = DefaultEC2Price
		}
		d, _ := decimal.NewFromString(p)
		fmt.Fprintf(&b, "<item><instanceType>%s</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>%s</spotPrice><timestamp>%s</timestamp><availabilityZone>%s</availabilityZone></item>",
			xmlEscape(typ), d.StringFixed(6), s.now().Format(ec2Time), xmlEscape(az))
	}
	b.WriteString("</spotPriceHistorySet><nextToken/>")
	s.mu.Unlock()
	ec2OK(w, "DescribeSpotPriceHistory", b.String())
}

// reservationXML renders a capacity reservation under tag.
func reservationXML(tag string, res *Reservation) string {
	return fmt.Sprintf("<%s><capacityReservationId>%s</capacityReservationId><instanceType>%s</instanceType><availabilityZone>%s</availabilityZone>"+
		"<totalInstanceCount>%d</totalInstanceCount><availableInstanceCount>%d</availableInstanceCount><state>%s</state>"+
		"<startDate>%s</startDate><endDate>%s</endDate><reservationType>capacity-block</reservationType><instancePlatform>Linux/UNIX</instancePlatform>%s</%s>",
		tag, res.ID, xmlEscape(res.SKU), xmlEscape(res.AZ), res.Count, res.Count, res.State,
		res.Start.Format(ec2Time), res.End.Format(ec2Time), tagSetXML(res.Tags), tag)
}

// ec2Purchase buys a capacity block. CapacityBlockOfferingId has the form the
// fake understands: "cbo-<anything>"; the block is for p4de.24xlarge in
// us-east-1a unless prices name "offering:<id>" as "<type>/<az>/<hours>".
// The block starts now and is active at once.
func (s *Server) ec2Purchase(w http.ResponseWriter, r *http.Request) {
	id := r.Form.Get("CapacityBlockOfferingId")
	if id == "" || r.Form.Get("InstancePlatform") == "" {
		ec2Error(w, 400, "MissingParameter", "CapacityBlockOfferingId and InstancePlatform are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, hit := s.takeFaultLocked("aws", "PurchaseCapacityBlock", Capacity, Quota, Throttle, Unavailable); hit {
		ec2FaultError(w, f.Kind)
		return
	}
	for _, res := range s.st.Reservations {
		if res.OfferingID == id {
			ec2Error(w, 400, "InvalidCapacityBlockOfferingId.Unavailable", "The capacity block offering "+id+" is no longer available")
			return
		}
	}
	typ, az, hours := "p4de.24xlarge", "us-east-1a", 24
	if spec, ok := s.priceLocked("aws", "offering:"+id); ok {
		parts := strings.Split(spec, "/")
		if len(parts) == 3 {
			typ, az = parts[0], parts[1]
			hours, _ = strconv.Atoi(parts[2])
		}
	}
	now := s.now()
	res := &Reservation{ID: s.nextIDLocked("cr-"), OfferingID: id, SKU: typ, AZ: az, Count: 1,
		Tags: tagSpecs(r.Form, "capacity-reservation"), Start: now, End: now.Add(time.Duration(hours) * time.Hour), State: "active"}
	s.st.Reservations = append(s.st.Reservations, res)
	s.saveLocked()
	ec2OK(w, "PurchaseCapacityBlock", reservationXML("capacityReservation", res)+"<capacityBlockSet/>")
}

func (s *Server) ec2DescribeReservations(w http.ResponseWriter, r *http.Request) {
	filters := ec2Filters(r.Form)
	ids := map[string]bool{}
	for _, k := range indexed(r.Form, "CapacityReservationId") {
		ids[r.Form.Get(k)] = true
	}
	s.mu.Lock()
	var b strings.Builder
	b.WriteString("<capacityReservationSet>")
	for _, res := range s.st.Reservations {
		if azRegion(res.AZ) != sigRegion(r) || (len(ids) > 0 && !ids[res.ID]) || !matchFilters(filters, "", res.State, res.Tags) {
			continue
		}
		b.WriteString(reservationXML("item", res))
	}
	b.WriteString("</capacityReservationSet>")
	s.mu.Unlock()
	ec2OK(w, "DescribeCapacityReservations", b.String())
}
