package sluice.residency_test

import rego.v1

import data.sluice.testing

# Residency cases. Each one says which queue (data class, export approval),
# which offer location, and which residency rules must refuse it.
# "refused_by": [] means the offer must be allowed. Add a row to add a case.
cases := {
	"beijing-only queue, Alibaba Beijing: allowed": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "aliyun", "region": "cn-beijing"},
		"refused_by": [],
	},
	"beijing-only queue, Alibaba Hangzhou: refused": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "aliyun", "region": "cn-hangzhou"},
		"refused_by": ["residency.zone_not_allowed"],
	},
	"beijing-only queue, AutoDL Beijing A: allowed": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "autodl", "region": "beijingDC1"},
		"refused_by": [],
	},
	"beijing-only queue, AWS Beijing (cn-north-1): allowed": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "aws", "region": "cn-north-1"},
		"refused_by": [],
	},
	"beijing-only queue, Vast host in the US: refused": {
		"queue": {"data_class": "cn-beijing-only", "export_approved": true},
		"offer": {"provider": "vast", "region": "US", "city": "Dallas"},
		"refused_by": ["residency.zone_not_allowed"],
	},
	"beijing-only queue, Vast host in Beijing: allowed": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "vast", "region": "CN", "city": "Beijing"},
		"refused_by": [],
	},
	"beijing-only queue, Vast host in Shanghai: refused": {
		"queue": {"data_class": "cn-beijing-only"},
		"offer": {"provider": "vast", "region": "CN", "city": "Shanghai"},
		"refused_by": ["residency.zone_not_allowed"],
	},
	"domestic queue, Alibaba Hangzhou: allowed": {
		"queue": {"data_class": "cn-domestic"},
		"offer": {"provider": "aliyun", "region": "cn-hangzhou"},
		"refused_by": [],
	},
	"domestic queue, AutoDL Northwest: allowed": {
		"queue": {"data_class": "cn-domestic"},
		"offer": {"provider": "autodl", "region": "westDC2"},
		"refused_by": [],
	},
	"domestic queue, Vast host in Chengdu (China, no city entry): allowed": {
		"queue": {"data_class": "cn-domestic"},
		"offer": {"provider": "vast", "region": "CN", "city": "Chengdu"},
		"refused_by": [],
	},
	"domestic queue, Alibaba Hong Kong: refused": {
		"queue": {"data_class": "cn-domestic", "export_approved": true},
		"offer": {"provider": "aliyun", "region": "cn-hongkong"},
		"refused_by": ["residency.zone_not_allowed"],
	},
	"domestic queue, RunPod Kansas: refused": {
		"queue": {"data_class": "cn-domestic"},
		"offer": {"provider": "runpod", "region": "US-KS-2"},
		"refused_by": ["residency.zone_not_allowed"],
	},
	"public queue with export approval, RunPod Kansas: allowed": {
		"queue": {"data_class": "public", "export_approved": true},
		"offer": {"provider": "runpod", "region": "US-KS-2"},
		"refused_by": [],
	},
	"public queue without export approval, RunPod Kansas: refused": {
		"queue": {"data_class": "public", "export_approved": false},
		"offer": {"provider": "runpod", "region": "US-KS-2"},
		"refused_by": ["residency.export_not_approved"],
	},
	"public queue without export approval, Alibaba Shanghai: allowed": {
		"queue": {"data_class": "public", "export_approved": false},
		"offer": {"provider": "aliyun", "region": "cn-shanghai"},
		"refused_by": [],
	},
	"any queue, region not in the map: refused": {
		"queue": {"data_class": "public"},
		"offer": {"provider": "aliyun", "region": "cn-qingdao"},
		"refused_by": ["residency.unmapped"],
	},
	"any queue, provider not in the map: refused": {
		"queue": {"data_class": "public"},
		"offer": {"provider": "lambda", "region": "us-east-1"},
		"refused_by": ["residency.unmapped"],
	},
	"any queue, Vast country not in the map: refused": {
		"queue": {"data_class": "public"},
		"offer": {"provider": "vast", "region": "QA", "city": "Doha"},
		"refused_by": ["residency.unmapped"],
	},
	"AutoDL beijingDC3 (named South China, code says Beijing): unmapped until checked": {
		"queue": {"data_class": "cn-domestic"},
		"offer": {"provider": "autodl", "region": "beijingDC3"},
		"refused_by": ["residency.unmapped"],
	},
	"unknown data class: refused": {
		"queue": {"data_class": "secret"},
		"offer": {"provider": "aliyun", "region": "cn-beijing"},
		"refused_by": ["residency.unknown_data_class"],
	},
	"no data class: refused": {
		"queue": {"data_class": ""},
		"offer": {"provider": "aliyun", "region": "cn-beijing"},
		"refused_by": ["residency.unknown_data_class"],
	},
}

test_residency[name] if {
	some name, c in cases
	testing.rules(c, "residency") == testing.expected(c)
}

# Zone cases: where an offer's location maps. "" means unmapped.
zone_cases := {
	"Alibaba cn-beijing": {"offer": {"provider": "aliyun", "region": "cn-beijing"}, "zone": "beijing"},
	"Alibaba cn-hangzhou": {"offer": {"provider": "aliyun", "region": "cn-hangzhou"}, "zone": "east-china"},
	"Alibaba cn-nanjing": {"offer": {"provider": "aliyun", "region": "cn-nanjing"}, "zone": "east-china"},
	"Alibaba cn-zhangjiakou": {"offer": {"provider": "aliyun", "region": "cn-zhangjiakou"}, "zone": "cn-other"},
	"Alibaba ap-southeast-1": {"offer": {"provider": "aliyun", "region": "ap-southeast-1"}, "zone": "overseas"},
	"AutoDL yangzhouDC1": {"offer": {"provider": "autodl", "region": "yangzhouDC1"}, "zone": "east-china"},
	"AutoDL neimengDC1": {"offer": {"provider": "autodl", "region": "neimengDC1"}, "zone": "cn-other"},
	"AWS cn-north-1": {"offer": {"provider": "aws", "region": "cn-north-1"}, "zone": "beijing"},
	"AWS cn-northwest-1": {"offer": {"provider": "aws", "region": "cn-northwest-1"}, "zone": "cn-other"},
	"AWS us-east-1": {"offer": {"provider": "aws", "region": "us-east-1"}, "zone": "overseas"},
	"RunPod global": {"offer": {"provider": "runpod", "region": "global"}, "zone": "overseas"},
	"RunPod EUR-IS-1": {"offer": {"provider": "runpod", "region": "EUR-IS-1"}, "zone": "overseas"},
	"Vast DE": {"offer": {"provider": "vast", "region": "DE", "city": "Frankfurt"}, "zone": "overseas"},
	"Vast CN, Beijing": {"offer": {"provider": "vast", "region": "CN", "city": "Beijing"}, "zone": "beijing"},
	"Vast CN, city in other case and spaces": {"offer": {"provider": "vast", "region": "CN", "city": " HANGZHOU "}, "zone": "east-china"},
	"Vast CN, 上海": {"offer": {"provider": "vast", "region": "CN", "city": "上海"}, "zone": "east-china"},
	"Vast CN, Shenzhen": {"offer": {"provider": "vast", "region": "CN", "city": "Shenzhen"}, "zone": "cn-other"},
	"Vast CN, no city": {"offer": {"provider": "vast", "region": "CN", "city": ""}, "zone": "cn-other"},
	"Vast US city named Beijing is not China": {"offer": {"provider": "vast", "region": "US", "city": "Beijing"}, "zone": "overseas"},
	"region codes are case-sensitive": {"offer": {"provider": "aliyun", "region": "CN-BEIJING"}, "zone": ""},
	"unmapped": {"offer": {"provider": "aliyun", "region": "cn-qingdao"}, "zone": ""},
}

test_zone[name] if {
	some name, c in zone_cases
	testing.verdict(c).zone == c.zone
}

test_message_names_the_values if {
	c := {"queue": {"data_class": "cn-beijing-only"}, "offer": {"provider": "aliyun", "region": "cn-hangzhou"}}
	testing.verdict(c).reasons == {{
		"code": "residency",
		"rule": "residency.zone_not_allowed",
		"title": "Zone not allowed for the data class",
		"message": "region cn-hangzhou maps to east-china; data class cn-beijing-only allows beijing",
	}}
}

test_message_names_the_city if {
	c := {"queue": {"data_class": "cn-beijing-only"}, "offer": {"provider": "vast", "region": "CN", "city": "Shanghai"}}
	some reason in testing.verdict(c).reasons
	reason.message == "region CN (city Shanghai) maps to east-china; data class cn-beijing-only allows beijing"
}

test_unmapped_message if {
	c := {"offer": {"provider": "vast", "region": "QA", "city": ""}}
	some reason in testing.verdict(c).reasons
	reason.message == "region QA of provider vast is not mapped to a residency zone (policy/data/regions.json); unmapped regions are refused"
}
