package fake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// AutoDL elastic deployment API (Authorization: <token>, no "Bearer";
// envelope {"code":"Success","msg":"","data":…}; providers.md §4):
//
//	POST   /api/v1/dev/deployment                 {"name","deployment_type","replica_num","container_template":{dc_list,gpu_name_set,gpu_num,price_to,image_uuid,…}} → data.deployment_uuid
//	POST   /api/v1/dev/deployment/list            {"page_index","page_size"} → data.list[{uuid,name,status,replica_num}]
//	POST   /api/v1/dev/deployment/container/list  {"deployment_uuid",…} → data.list[{uuid,deployment_uuid,status,gpu_name,gpu_num,price,started_at}]
//	DELETE /api/v1/dev/deployment                 {"deployment_uuid"} → Success (stops and removes its containers)
//
// A container costs the GPU's list price (SetPrice("autodl", gpuName, yuan
// per GPU-hour), default DefaultAutoDLPrice) × gpu_num; its "price" is
// milli-yuan (yuan × 1000) per container-hour. A price_to (milli-yuan per
// GPU-hour) under the list price finds no machine. No idempotency key: each
// POST makes a deployment. Failures keep HTTP 200 with another code:
// Capacity → "NoEnoughResource"/库存不足, Quota → "BadRequest"/无当前资源访问权限,
// Throttle → HTTP 429 "TooManyRequests".

// DefaultAutoDLPrice is the list price per GPU-hour of a GPU with none set (CNY).
const DefaultAutoDLPrice = "6.68"

func autodlJSON(w http.ResponseWriter, status int, code, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg, "data": data})
}

// autodlFaults are the answers autodlFault gives to the faults it is told to make.
var autodlFaults = map[string]faultAnswer{
	Capacity:    {200, "NoEnoughResource", "库存不足，请稍后再试"},
	Quota:       {200, "BadRequest", "无当前资源访问权限"},
	Throttle:    {429, "TooManyRequests", "请求过于频繁"},
	Unavailable: {200, "FeatureNotAvailable", "该功能暂不可用"},
}

func autodlFault(w http.ResponseWriter, kind string) bool {
	return answerFault(w, kind, autodlFaults, func(w http.ResponseWriter, status int, code, msg string) { autodlJSON(w, status, code, msg, nil) })
}

func (s *Server) serveAutoDL(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" || strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		autodlJSON(w, 200, "AuthorizeFailed", "登录超时，请重新登录", nil)
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		autodlJSON(w, 200, "RequestParameterIsWrong", "参数错误", nil)
		return
	}
	switch r.Method + " " + strings.TrimSuffix(r.URL.Path, "/") {
	case "POST /api/v1/dev/deployment":
		s.autodlCreate(w, r, body)
	case "POST /api/v1/dev/deployment/list":
		s.mu.Lock()
		seen := map[string]bool{}
		list := []map[string]any{}
		for _, i := range s.st.Instances {
			if i.Provider == "autodl" && i.Running() && !seen[i.Group] {
				seen[i.Group] = true
				list = append(list, map[string]any{"uuid": i.Group, "name": i.Name, "status": "running", "deployment_type": "ReplicaSet"})
			}
		}
		s.mu.Unlock()
		autodlJSON(w, 200, "Success", "", map[string]any{"list": list, "page_index": 1, "page_size": 100, "max_page": 1, "offset": 0})
	case "POST /api/v1/dev/deployment/container/list":
		var dep string
		_ = json.Unmarshal(body["deployment_uuid"], &dep)
		s.mu.Lock()
		list := []map[string]any{}
		for _, i := range s.st.Instances {
			if i.Provider == "autodl" && i.Running() && (dep == "" || i.Group == dep) {
				list = append(list, map[string]any{"uuid": i.ID, "deployment_uuid": i.Group, "machine_id": "m-" + i.ID, "status": "running",
					"gpu_name": i.SKU, "gpu_num": i.GPUs, "price": json.Number(decimal.RequireFromString(i.Price).Shift(3).StringFixed(1)),
					"started_at": i.LaunchedAt.In(shanghai).Format("2006-01-02T15:04:05-07:00"), "name": i.Name})
			}
		}
		s.mu.Unlock()
		autodlJSON(w, 200, "Success", "", map[string]any{"list": list, "page_index": 1, "page_size": 100, "max_page": 1, "offset": 0})
	case "DELETE /api/v1/dev/deployment":
		var dep string
		_ = json.Unmarshal(body["deployment_uuid"], &dep)
		s.mu.Lock()
		if f, hit := s.takeFaultLocked("autodl", "DELETE deployment", TerminateTimeout, Throttle); hit {
			s.mu.Unlock()
			if !autodlFault(w, f.Kind) {
				s.hang(w, r)
			}
			return
		}
		n := 0
		for _, i := range s.st.Instances {
			if i.Provider == "autodl" && i.Group == dep && i.Running() {
				s.terminateLocked(i)
				n++
			}
		}
		s.saveLocked()
		s.mu.Unlock()
		if n == 0 {
			autodlJSON(w, 200, "DeploymentNotFound", "部署不存在", nil)
			return
		}
		autodlJSON(w, 200, "Success", "", nil)
	default:
		autodlJSON(w, 404, "NotFound", "not found", nil)
	}
}

type autodlTemplate struct {
	DCList     []string    `json:"dc_list"`
	GPUNameSet []string    `json:"gpu_name_set"`
	GPUNum     int         `json:"gpu_num"`
	PriceTo    json.Number `json:"price_to"`
	ImageUUID  string      `json:"image_uuid"`
}

func (s *Server) autodlCreate(w http.ResponseWriter, r *http.Request, body map[string]json.RawMessage) {
	var name string
	var replicas int
	var tpl autodlTemplate
	_ = json.Unmarshal(body["name"], &name)
	_ = json.Unmarshal(body["replica_num"], &replicas)
	if err := json.Unmarshal(body["container_template"], &tpl); err != nil || name == "" || replicas < 1 ||
		len(tpl.GPUNameSet) == 0 || len(tpl.DCList) == 0 || tpl.GPUNum < 1 || tpl.ImageUUID == "" {
		autodlJSON(w, 200, "RequestParameterIsWrong", "参数错误: name, replica_num, dc_list, gpu_name_set, gpu_num, image_uuid", nil)
		return
	}
	s.mu.Lock()
	fault, hit := s.placementFaultLocked("autodl", "POST deployment")
	if hit && autodlFault(w, fault.Kind) {
		s.mu.Unlock()
		return
	}
	gpu := tpl.GPUNameSet[0]
	list, ok := s.priceLocked("autodl", gpu)
	if !ok {
		list = DefaultAutoDLPrice
	}
	if tpl.PriceTo != "" {
		ceiling, err := decimal.NewFromString(tpl.PriceTo.String())
		if err != nil || ceiling.LessThan(decimal.RequireFromString(list).Shift(3)) {
			s.mu.Unlock()
			autodlJSON(w, 200, "NoEnoughResource", "库存不足: 无满足价格条件的机器", nil)
			return
		}
	}
	per := decimal.RequireFromString(list).Mul(decimal.NewFromInt(int64(tpl.GPUNum))).String()
	dep := strings.ToLower(s.nextIDLocked("dep-"))
	for range replicas {
		i := &Instance{Provider: "autodl", ID: strings.ToLower(s.nextIDLocked("ctr-")), Group: dep, Name: name, Token: name, SKU: gpu,
			Region: tpl.DCList[0], GPUs: tpl.GPUNum, Bid: tpl.PriceTo.String(), Price: priceFor(fault, hit, per), Currency: "CNY", Market: "on-demand"}
		s.addLocked(i)
	}
	s.saveLocked()
	s.mu.Unlock()
	if hit && fault.Kind == TimeoutAfterCreate {
		s.hang(w, r)
		return
	}
	autodlJSON(w, 200, "Success", "", map[string]any{"deployment_uuid": dep})
}

// shanghai is China Standard Time (UTC+8, no daylight saving), the offset
// AutoDL writes its times in. A fixed zone: the machine may have no tzdata.
var shanghai = time.FixedZone("CST", 8*60*60)
