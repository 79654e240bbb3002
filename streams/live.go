package streams

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

var liveEvent = EventType{Name: "system.live", Data: LiveSnapshot{}, Doc: "The server's state, every second."}

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time        `json:"at"`
	RequestsPerS float64          `json:"requests_per_s" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64          `json:"limited_per_s" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64            `json:"open_streams" doc:"Streams open on this replica, this one included."`
	Gauges       map[string]int64 `json:"gauges" doc:"The gauges the server's features declare, by name (its properties list them): each an integer read at most once a second, the last value read while its source does not answer."`
	Goroutines   int              `json:"goroutines"`
	HeapBytes    uint64           `json:"heap_bytes" doc:"Bytes of live and not yet collected heap objects."`
}

func (p *Plane) serveLive(st *Stream) {
	if st.Start() != nil {
		return
	}
	every := time.NewTicker(time.Second)
	defer every.Stop()
	Pump(st, every.C, func(time.Time, bool) error {
		return st.sendValue(liveEvent.Name, p.live.snapshot(st.r.Context(), p))
	})
}

// liveSnapshots computes the snapshot at most once a second, whatever the
// number of streams. One stream at a time reads the gauges, outside the
// lock; meanwhile the others send the last values.
type liveSnapshots struct {
	mu             sync.Mutex
	last           LiveSnapshot
	requests, lims uint64
	reading        bool // a stream is reading the gauges
}

// snapshot is the snapshot to send now on the stream of ctx.
func (l *liveSnapshots) snapshot(ctx context.Context, p *Plane) LiveSnapshot {
	s := p.s
	l.mu.Lock()
	if s.Now().Sub(l.last.At) < 900*time.Millisecond || l.reading {
		defer l.mu.Unlock()
		if l.last.Gauges == nil { // none read yet: each 0 (AddGauge), never null
			l.last.Gauges = make(map[string]int64, len(p.d.gauges))
			for _, g := range p.d.gauges {
				l.last.Gauges[g.name] = 0
			}
		}
		return l.last
	}
	l.reading = true
	last := l.last.Gauges
	l.mu.Unlock()
	gauges := readGauges(ctx, s, p.d.gauges, last)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reading = false
	now := s.Now()
	elapsed := now.Sub(l.last.At)
	req, lim := s.Traffic()
	snap := LiveSnapshot{At: now.UTC(), OpenStreams: int64(p.count()), Gauges: gauges, Goroutines: runtime.NumGoroutine(), HeapBytes: heapBytes()}
	if !l.last.At.IsZero() && elapsed > 0 {
		snap.RequestsPerS = float64(req-l.requests) / elapsed.Seconds()
		snap.LimitedPerS = float64(lim-l.lims) / elapsed.Seconds()
	}
	l.last, l.requests, l.lims = snap, req, lim
	return snap
}

// heapBytes reads the heap's object bytes without stopping the world.
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
