// Package runpod places RunPod plan lines through the GraphQL API
// (providers.md §2.1): spot lines with podRentInterruptable and bidPerGpu
// (USD per GPU-hour: the line's per-pod bid divided by its GPUs and rounded
// down to 3 places by brokers/bid), on-demand lines with
// podFindAndDeployOnDemand pinned to the offer's cloud type (SECURE or
// COMMUNITY, from the offer id) and data centre (when the offer names one);
// Release is podTerminate; Find and Instances read myself { pods }.
//
// RunPod has no idempotency key and no tags: each unit is one pod named
// placement.UnitName(decision, line, unit) ("sluice-dec-…-l0-u1"), and Place
// first looks for pods of that name, so a retry buys only the units that are
// missing. A definite refusal (capacity, quota, capability) part-way through
// a line terminates the pods already made for it: a line is all or nothing. The price read back is the pod's costPerHr (USD per pod-hour =
// per unit-hour); beyond the tolerance the pods are terminated at once
// (*placement.MismatchError).
//
// RunPod has been removing its spot path (docs commit 8e5aebdb, 2026-05-06):
// a GraphQL error on podRentInterruptable is sluice.ErrCapabilityUnavailable.
//
// Billing: per second, no minimum (brokers/billing "runpod").
package runpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/brokers/bid"
	"github.com/sluicehq/sluice/brokers/placement"
	"github.com/sluicehq/sluice/pricing"
	pricingrunpod "github.com/sluicehq/sluice/pricing/runpod"
)

// Provider is the provider name.
const Provider = "runpod"

// Currency of RunPod prices.
const Currency = "USD"

// Config configures the adapter.
type Config struct {
	// URL is the GraphQL endpoint (default https://api.runpod.io/graphql).
	URL    string
	APIKey string
	// ImageName is the container image of every pod (default DefaultImage).
	ImageName string
	// ContainerDiskInGb is the container disk (default 50).
	ContainerDiskInGb int
	// Tolerance is the relative price read-back tolerance (default placement.DefaultTolerance).
	Tolerance  decimal.Decimal
	HTTPClient *http.Client
	Now        func() time.Time
}

// DefaultImage is a RunPod PyTorch image (set Config.ImageName to the training image).
const DefaultImage = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"

func (c Config) withDefaults() Config {
	if c.URL == "" {
		c.URL = pricingrunpod.DefaultBaseURL
	}
	if c.ImageName == "" {
		c.ImageName = DefaultImage
	}
	if c.ContainerDiskInGb <= 0 {
		c.ContainerDiskInGb = 50
	}
	c.Tolerance, c.HTTPClient, c.Now = placement.OrTolerance(c.Tolerance), placement.OrHTTPClient(c.HTTPClient), placement.OrNow(c.Now)
	return c
}

// API is one GraphQL request: it returns the "data" member of a 200 answer,
// or an error wrapping a sluice class (*GraphQLError for "errors").
type API interface {
	Do(ctx context.Context, op, query string, variables map[string]any, spot bool) (gjson.Result, error)
}

// Client is the HTTP API.
type Client struct{ cfg Config }

// Do POSTs {"query","variables"} with the Bearer key.
func (c *Client) Do(ctx context.Context, op, query string, variables map[string]any, spot bool) (gjson.Result, error) {
	ans, err := placement.CallJSON(ctx, c.cfg.HTTPClient, Provider, op, http.MethodPost, c.cfg.URL, placement.Bearer(c.cfg.APIKey),
		map[string]any{"query": query, "variables": variables})
	if err != nil {
		return gjson.Result{}, err
	}
	if ans.Err != nil {
		return gjson.Result{}, fmt.Errorf("runpod %s: %v: %w", op, ans.Err, placement.StatusClass(ans.Status))
	}
	return ParseResponse(op, ans.Body, spot)
}

// ParseResponse reads a GraphQL answer: the "data" member, or a
// *GraphQLError when "errors" is a non-empty list.
func ParseResponse(op string, body []byte, spot bool) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, fmt.Errorf("runpod %s: answer is not JSON: %w", op, sluice.ErrTransient)
	}
	root := gjson.ParseBytes(body)
	if errs := root.Get("errors"); errs.IsArray() && len(errs.Array()) > 0 {
		var msgs []string
		for _, e := range errs.Array() {
			m := e.Get("message").String()
			if len(m) > 300 {
				m = m[:300]
			}
			msgs = append(msgs, m)
		}
		return gjson.Result{}, &GraphQLError{Op: op, Messages: msgs, class: Classify(spot, msgs)}
	}
	data := root.Get("data")
	if !data.IsObject() {
		return gjson.Result{}, fmt.Errorf("runpod %s: no data in the answer: %w", op, sluice.ErrTransient)
	}
	return data, nil
}

// Adapter is the RunPod placement.Adapter.
type Adapter struct {
	cfg   Config
	api   API
	locks placement.Locks
}

var _ placement.Adapter = (*Adapter)(nil)

// New is an adapter over the HTTP API.
func New(cfg Config) *Adapter {
	cfg = cfg.withDefaults()
	return &Adapter{cfg: cfg, api: &Client{cfg: cfg}}
}

// Provider is "runpod".
func (a *Adapter) Provider() string { return Provider }

// Billing is per second (brokers/billing).
func (a *Adapter) Billing() (granularity, minimum time.Duration) { return placement.Billing(Provider) }

// offerRef is what a RunPod offer id says:
// "runpod:<gpuTypeId>:<cloud>:<n>x:<market>" (pricing/runpod).
type offerRef struct {
	GPUTypeID, Cloud string
	GPUs             int
}

// ParseOfferID reads a RunPod offer id (the gpuTypeId may hold spaces, not colons).
func ParseOfferID(id string) (offerRef, error) {
	parts := strings.Split(id, ":")
	bad := fmt.Errorf("runpod: offer id %q: not a RunPod offer id: %w", id, sluice.ErrQuota)
	if len(parts) != 5 || parts[0] != Provider || parts[1] == "" || !strings.HasSuffix(parts[3], "x") {
		return offerRef{}, bad
	}
	n, err := strconv.Atoi(strings.TrimSuffix(parts[3], "x"))
	if err != nil || n < 1 || n > sluice.MaxGPUsPerUnit {
		return offerRef{}, bad
	}
	var cloud string
	switch parts[2] {
	case "secure":
		cloud = "SECURE"
	case "community":
		cloud = "COMMUNITY"
	default:
		return offerRef{}, bad
	}
	return offerRef{GPUTypeID: parts[1], Cloud: cloud, GPUs: n}, nil
}

const podFields = "id name costPerHr desiredStatus gpuCount machineId lastStartedAt"

const (
	rentQuery     = "mutation Rent($input: PodRentInterruptableInput!) { podRentInterruptable(input: $input) { " + podFields + " } }"
	deployQuery   = "mutation Deploy($input: PodFindAndDeployOnDemandInput!) { podFindAndDeployOnDemand(input: $input) { " + podFields + " } }"
	terminateQ    = "mutation Terminate($input: PodTerminateInput!) { podTerminate(input: $input) }"
	podsQuery     = "query Pods { myself { pods { " + podFields + " } } }"
	terminatedMsg = "pod not found"
)

// Pod is one pod as RunPod reports it.
type Pod struct {
	ID, Name, Status string
	// CostPerHr is USD per pod-hour (exact from the JSON number text); zero
	// Money when absent.
	CostPerHr  sluice.Money
	GPUs       int
	LaunchedAt time.Time
}

// ParsePod reads one pod object.
func ParsePod(r gjson.Result) (Pod, error) {
	id := r.Get("id")
	if id.Type != gjson.String || id.String() == "" {
		return Pod{}, errors.New("pod without id")
	}
	p := Pod{ID: id.String(), Name: r.Get("name").String(), Status: r.Get("desiredStatus").String(), GPUs: int(r.Get("gpuCount").Int())}
	d, present, err := pricing.WireAmount(r.Get("costPerHr"))
	if err != nil {
		return Pod{}, fmt.Errorf("pod %s costPerHr %q: %v", p.ID, r.Get("costPerHr").Raw, err)
	}
	if present {
		p.CostPerHr = sluice.Money{Amount: d, Currency: Currency}
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Get("lastStartedAt").String()); err == nil {
		p.LaunchedAt = t.UTC()
	}
	return p, nil
}

// ParsePods reads myself.pods from a data member.
func ParsePods(data gjson.Result) ([]Pod, error) {
	list := data.Get("myself.pods")
	if !list.IsArray() {
		return nil, errors.New("myself.pods: missing or not a list")
	}
	var out []Pod
	for _, r := range list.Array() {
		p, err := ParsePod(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (a *Adapter) pods(ctx context.Context) ([]Pod, error) {
	data, err := a.api.Do(ctx, "myself.pods", podsQuery, map[string]any{}, false)
	if err != nil {
		return nil, err
	}
	pods, err := ParsePods(data)
	if err != nil {
		return nil, fmt.Errorf("runpod myself.pods: %v: %w", err, sluice.ErrTransient)
	}
	return pods, nil
}

// Place buys line one pod per unit, skipping units whose pod exists.
func (a *Adapter) Place(ctx context.Context, decisionID string, lineNo int, line sluice.Line, lim bid.Limits) (sluice.Placement, error) {
	s, err := placement.Begin(Provider, ParseOfferID, notPlaceable, decisionID, lineNo, line, lim, a.cfg.Now())
	ref, p, b := s.Ref, s.Placement, s.Bid
	if err != nil {
		return p, err
	}
	defer a.locks.Lock(p.ClientToken)()
	have, err := a.pods(ctx)
	if err != nil {
		return p, err
	}
	byName := map[string]Pod{}
	for _, pod := range have {
		byName[pod.Name] = pod
	}
	spot := line.Market == sluice.Spot
	var got []Pod
	for u := range line.Units {
		name := placement.UnitName(decisionID, lineNo, u)
		if pod, ok := byName[name]; ok {
			got = append(got, pod)
			continue
		}
		input := map[string]any{"gpuTypeId": ref.GPUTypeID, "gpuCount": ref.GPUs, "cloudType": ref.Cloud, "name": name,
			"imageName": a.cfg.ImageName, "containerDiskInGb": a.cfg.ContainerDiskInGb, "volumeInGb": 0,
			"env": []map[string]string{{"key": "SLUICE_DECISION", "value": decisionID}, {"key": "SLUICE_LINE", "value": strconv.Itoa(lineNo)}}}
		if line.Region != "" && line.Region != pricingrunpod.Region {
			input["dataCenterId"] = line.Region
		}
		op, q := "podFindAndDeployOnDemand", deployQuery
		if spot {
			op, q = "podRentInterruptable", rentQuery
			input["bidPerGpu"] = json.RawMessage(b.Text)
		}
		data, err := a.api.Do(ctx, op, q, map[string]any{"input": input}, spot)
		if err != nil {
			p.ExternalIDs = podIDs(got)
			if len(got) > 0 && !errors.Is(err, sluice.ErrTransient) && !errors.Is(err, context.Canceled) {
				// A definite refusal part-way: the line is not placed, so the
				// pods already made for it are terminated rather than left
				// billing (a transient error keeps them for the retry to adopt).
				if _, rerr := a.Release(ctx, p); rerr != nil {
					return p, fmt.Errorf("%w; terminating the %d pods already made: %v", err, len(got), rerr)
				}
				p.ExternalIDs = nil
			}
			return p, err
		}
		pod, err := ParsePod(data.Get(op))
		if err != nil {
			p.ExternalIDs = podIDs(got)
			return p, fmt.Errorf("runpod %s %s: %v: %w", op, name, err, sluice.ErrTransient)
		}
		got = append(got, pod)
	}
	p.ExternalIDs = podIDs(got)
	want := placement.Expected(line)
	var reason string
	for _, pod := range got {
		if !pod.CostPerHr.IsSet() {
			continue
		}
		p.Price = pod.CostPerHr
		if r := placement.CheckPrice(line.Market, pod.CostPerHr, want, a.cfg.Tolerance); r != "" && reason == "" {
			reason = "pod " + pod.ID + ": " + r
		}
	}
	if !p.Price.IsSet() {
		p.Price = want
	}
	if reason != "" {
		return placement.Mismatch(ctx, p, reason, a.Release)
	}
	return p, nil
}

// notPlaceable refuses reserved lines and lines without units (placement.Begin).
func notPlaceable(line sluice.Line) string {
	if line.Market == sluice.Reserved || line.Units < 1 {
		return "not placeable"
	}
	return ""
}

func podIDs(pods []Pod) []string {
	var ids []string
	for _, p := range pods {
		ids = append(ids, p.ID)
	}
	return ids
}

// Find returns the pods named for (decisionID, lineNo).
func (a *Adapter) Find(ctx context.Context, decisionID string, lineNo int) (sluice.Placement, bool, error) {
	pods, err := a.pods(ctx)
	if err != nil {
		return sluice.Placement{}, false, err
	}
	prefix := placement.Name(decisionID, lineNo) + "-u"
	p := placement.Found(Provider, decisionID, lineNo)
	for _, pod := range pods {
		if !strings.HasPrefix(pod.Name, prefix) {
			continue
		}
		p.ExternalIDs = append(p.ExternalIDs, pod.ID)
		p.Units++
		p.Price = pod.CostPerHr
		placement.Earliest(&p, pod.LaunchedAt)
	}
	return p, p.Units > 0, nil
}

// Release terminates every pod of p; a pod RunPod no longer knows counts as gone.
func (a *Adapter) Release(ctx context.Context, p sluice.Placement) (sluice.ReleaseResult, error) {
	return placement.ReleaseEach(ctx, p.ExternalIDs, func(ctx context.Context, id string) error {
		_, err := a.api.Do(ctx, "podTerminate", terminateQ, map[string]any{"input": map[string]string{"podId": id}}, false)
		return err
	}, podGone, a.cfg.Now)
}

// podGone is RunPod's answer to terminating a pod it no longer knows: a
// GraphQL error "pod not found".
func podGone(err error) bool {
	var ge *GraphQLError
	return errors.As(err, &ge) && slices.ContainsFunc(ge.Messages, func(m string) bool { return strings.Contains(strings.ToLower(m), terminatedMsg) })
}

// Instances lists pods whose name Sluice wrote.
func (a *Adapter) Instances(ctx context.Context) ([]sluice.Instance, error) {
	pods, err := a.pods(ctx)
	if err != nil {
		return nil, err
	}
	return placement.Named(Provider, pods, func(pod Pod) string { return pod.Name }, func(pod Pod) sluice.Instance {
		return sluice.Instance{ExternalID: pod.ID, State: pod.Status, LaunchedAt: pod.LaunchedAt, Price: pod.CostPerHr}
	}), nil
}
