//go:build !linux

package bench_test

import "time"

// threadCPU is not measured here: loopCPU reports no cpu-ns/op.
func threadCPU() (time.Duration, bool) { return 0, false }
