package fake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/shopspring/decimal"
)

// RunPod GraphQL (POST /graphql, Authorization: Bearer; providers.md §2.1).
// The fake recognises the operation by the field name in the query:
// podRentInterruptable(input: $input) and podFindAndDeployOnDemand(input:
// $input) (input: gpuTypeId, gpuCount, cloudType, bidPerGpu, name,
// dataCenterId …) → { id name costPerHr desiredStatus gpuCount machineId };
// podTerminate(input: {podId}) → null; myself { pods { … } } → every pod not
// terminated. RunPod has no idempotency key: two creates make two pods.
//
// A spot pod costs bidPerGpu × gpuCount per hour; an on-demand pod the
// price set for its gpuTypeId (per GPU-hour, default DefaultRunPodPrice) ×
// gpuCount. Failures: Capacity → GraphQL error "There are no longer any
// instances available with the requested specifications…"; Quota → a
// spend-limit error; Throttle → HTTP 429; Unavailable → the GraphQL
// validation error a removed mutation gives ("Cannot query field …").

// DefaultRunPodPrice is the on-demand price per GPU-hour of a type with none set (USD).
const DefaultRunPodPrice = "1.89"

type gqlRequest struct {
	Query     string                     `json:"query"`
	Variables map[string]json.RawMessage `json:"variables"`
}

func gqlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func gqlErrors(w http.ResponseWriter, msg string) {
	gqlJSON(w, 200, map[string]any{"errors": []map[string]any{{"message": msg}}, "data": nil})
}

func runpodFault(w http.ResponseWriter, kind, op string) bool {
	switch kind {
	case Capacity:
		gqlErrors(w, "There are no longer any instances available with the requested specifications. Please refresh and try again.")
	case Quota:
		gqlErrors(w, "You have reached your max spend limit for pods. Please contact support to increase it.")
	case Throttle:
		gqlJSON(w, 429, map[string]any{"errors": []map[string]any{{"message": "Too many requests"}}})
	case Unavailable:
		gqlErrors(w, `Cannot query field "`+op+`" on type "Mutation".`)
	default:
		return false
	}
	return true
}

func runpodPod(i *Instance) map[string]any {
	status := "RUNNING"
	if !i.Running() {
		status = "TERMINATED"
	}
	return map[string]any{"id": i.ID, "name": i.Name, "costPerHr": json.Number(i.Price), "desiredStatus": status,
		"gpuCount": i.GPUs, "machineId": "m-" + i.ID, "imageName": "runpod/pytorch", "lastStartedAt": i.LaunchedAt.Format("2006-01-02T15:04:05.000Z"),
		"gpuTypeId": i.SKU, "interruptible": i.Market == "spot"}
}

func (s *Server) serveRunPod(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		gqlJSON(w, 401, map[string]any{"errors": []map[string]any{{"message": "Unauthorized"}}})
		return
	}
	var req gqlRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		gqlJSON(w, 400, map[string]any{"errors": []map[string]any{{"message": "Must provide query string."}}})
		return
	}
	switch {
	case strings.Contains(req.Query, "podRentInterruptable"):
		s.runpodCreate(w, r, req, "podRentInterruptable")
	case strings.Contains(req.Query, "podFindAndDeployOnDemand"):
		s.runpodCreate(w, r, req, "podFindAndDeployOnDemand")
	case strings.Contains(req.Query, "podTerminate"):
		s.runpodTerminate(w, r, req)
	case strings.Contains(req.Query, "myself"):
		s.mu.Lock()
		pods := []map[string]any{}
		for _, i := range s.st.Instances {
			if i.Provider == "runpod" && i.Running() {
				pods = append(pods, runpodPod(i))
			}
		}
		s.mu.Unlock()
		gqlJSON(w, 200, map[string]any{"data": map[string]any{"myself": map[string]any{"id": "user-fake", "pods": pods}}})
	default:
		gqlErrors(w, "fake: unsupported operation")
	}
}

type runpodInput struct {
	GPUTypeID    string      `json:"gpuTypeId"`
	GPUCount     int         `json:"gpuCount"`
	CloudType    string      `json:"cloudType"`
	BidPerGPU    json.Number `json:"bidPerGpu"`
	Name         string      `json:"name"`
	DataCenterID string      `json:"dataCenterId"`
	ImageName    string      `json:"imageName"`
	PodID        string      `json:"podId"`
}

func (s *Server) runpodCreate(w http.ResponseWriter, r *http.Request, req gqlRequest, op string) {
	var in runpodInput
	dec := json.NewDecoder(bytes.NewReader(req.Variables["input"]))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil || in.GPUTypeID == "" || in.GPUCount < 1 || in.ImageName == "" {
		gqlErrors(w, `Variable "$input" got invalid value; gpuTypeId, gpuCount ≥ 1 and imageName are required`)
		return
	}
	if in.CloudType != "" && in.CloudType != "SECURE" && in.CloudType != "COMMUNITY" && in.CloudType != "ALL" {
		gqlErrors(w, `Variable "$input" got invalid value; cloudType`)
		return
	}
	s.mu.Lock()
	fault, hit := s.placementFaultLocked("runpod", op)
	if hit && runpodFault(w, fault.Kind, op) {
		s.mu.Unlock()
		return
	}
	i := &Instance{Provider: "runpod", Name: in.Name, Token: in.Name, SKU: in.GPUTypeID, GPUs: in.GPUCount, Currency: "USD",
		Region: in.DataCenterID, Market: "on-demand", Tags: map[string]string{"cloudType": in.CloudType}}
	n := decimal.NewFromInt(int64(in.GPUCount))
	if op == "podRentInterruptable" {
		b, err := decimal.NewFromString(in.BidPerGPU.String())
		if err != nil || !b.IsPositive() {
			s.mu.Unlock()
			gqlErrors(w, "bidPerGpu must be a positive number")
			return
		}
		i.Market, i.Bid, i.Price = "spot", in.BidPerGPU.String(), b.Mul(n).String()
	} else {
		p, ok := s.priceLocked("runpod", in.GPUTypeID)
		if !ok {
			p = DefaultRunPodPrice
		}
		i.Price = decimal.RequireFromString(p).Mul(n).String()
	}
	i.Price = priceFor(fault, hit, i.Price)
	i.ID = strings.ToLower(s.nextIDLocked("pod"))
	s.addLocked(i)
	s.saveLocked()
	pod := runpodPod(i)
	s.mu.Unlock()
	if hit && fault.Kind == TimeoutAfterCreate {
		s.hang(w, r)
		return
	}
	gqlJSON(w, 200, map[string]any{"data": map[string]any{op: pod}})
}

func (s *Server) runpodTerminate(w http.ResponseWriter, r *http.Request, req gqlRequest) {
	var in runpodInput
	_ = json.Unmarshal(req.Variables["input"], &in)
	s.mu.Lock()
	if f, hit := s.takeFaultLocked("runpod", "podTerminate", TerminateTimeout, Throttle); hit {
		s.mu.Unlock()
		if !runpodFault(w, f.Kind, "podTerminate") {
			s.hang(w, r)
		}
		return
	}
	i := s.findLocked("runpod", in.PodID)
	if i == nil || !i.Running() {
		s.mu.Unlock()
		gqlErrors(w, "pod not found")
		return
	}
	s.terminateLocked(i)
	s.saveLocked()
	s.mu.Unlock()
	gqlJSON(w, 200, map[string]any{"data": map[string]any{"podTerminate": nil}})
}
