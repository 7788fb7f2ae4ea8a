package policy

// Test helpers shared with the external test package (policy_test).
var (
	BenchOffers  = benchOffers
	BenchProfile = benchProfile
	BenchNow     = benchNow
	QueueProfile = queue
)
