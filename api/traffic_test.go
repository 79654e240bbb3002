package api

import (
	"testing"
	"time"
)

// Without metrics (BRAIN_METRICS_ADDR=off) no duration is recorded; the
// live snapshot's counts still are.
func TestTrafficWithoutMetrics(t *testing.T) {
	tr := newTraffic(nil)
	tr.observe("/x", 429, time.Second)
	if tr.durations != nil {
		t.Fatal("a histogram without metrics")
	}
	if tr.requests.Load() != 1 || tr.limited.Load() != 1 {
		t.Fatalf("requests %d, limited %d; want 1, 1", tr.requests.Load(), tr.limited.Load())
	}
	var m *Metrics
	m.ObserveBreaker(nil) // nil metrics observe nothing
	m.ObserveConns(nil)
}
