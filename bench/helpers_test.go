package bench_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func budget(name string, limits ...ratelimit.Limit) ratelimit.Budget {
	return ratelimit.Budget{Name: name, Limits: limits}
}

func lim(name string, limit int, window time.Duration, burst int) ratelimit.Limit {
	return ratelimit.Limit{Name: name, Rate: ratelimit.Rate{Limit: limit, Window: window, Burst: burst}}
}

// loopCPU runs f in b.Loop on one locked thread and reports the thread's
// CPU time per call (cpu-ns/op), which time the thread waits for a core
// on a loaded machine does not inflate, as it does ns/op.
func loopCPU(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	for b.Loop() {
		f()
	}
	if end, _ := threadCPU(); ok {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}
