package sluice.data_test

import rego.v1

import data.data.sluice.city_zones
import data.data.sluice.regions
import data.data.sluice.settings

# Checks on the data files themselves, so a typo in data/*.json fails the
# tests instead of silently refusing (or allowing) offers.

zones := {"beijing", "east-china", "cn-other", "overseas"}

test_every_region_maps_to_a_known_zone if {
	every _, table in regions {
		every _, zone in table {
			zone in zones
		}
	}
}

test_every_city_maps_to_a_known_zone if {
	every _, countries in city_zones {
		every _, cities in countries {
			every _, zone in cities {
				zone in zones
			}
		}
	}
}

test_city_names_are_lower_case_without_spaces_around if {
	every _, countries in city_zones {
		every _, cities in countries {
			every city, _ in cities {
				city == lower(trim_space(city))
			}
		}
	}
}

test_city_tables_belong_to_a_mapped_region if {
	every provider, countries in city_zones {
		every country, _ in countries {
			regions[provider][country]
		}
	}
}

test_checkpoint_limit_is_a_positive_whole_number if {
	limit := settings.interruptibility.max_checkpoint_interval_minutes
	is_number(limit)
	limit > 0
	limit == round(limit)
}

test_never_spot_workloads_are_known_workloads if {
	every workload in settings.interruptibility.never_spot_workloads {
		workload in {"training", "batch-inference", "long-lived-inference"}
	}
}

test_price_limits_have_at_most_six_decimals if {
	every _, limits in settings.budget.tiers {
		every _, amount in limits.max_price_per_gpu_hour {
			regex.match(`^[0-9]+(\.[0-9]{1,6})?$`, amount)
		}
	}
}

test_emergency_flag_is_true_or_false if {
	is_boolean(settings.budget.emergency_allows_on_demand)
}

test_price_limits_are_decimal_strings_in_iso_currencies if {
	every tier, limits in settings.budget.tiers {
		tier in {"base", "elastic", "emergency"}
		every currency, amount in limits.max_price_per_gpu_hour {
			regex.match(`^[A-Z]{3}$`, currency)
			is_string(amount)
			regex.match(`^[0-9]+(\.[0-9]+)?$`, amount)
		}
	}
}
