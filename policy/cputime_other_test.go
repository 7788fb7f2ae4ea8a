//go:build !unix

package policy

import "time"

// processCPU is not measured on this platform (the cpu-ns/op metrics read 0).
func processCPU() time.Duration { return 0 }
