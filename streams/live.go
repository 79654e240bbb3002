package streams

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
)

var liveEvent = EventType{Name: "system.live", Data: LiveSnapshot{}, Doc: "The server's state, every second."}

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time        `json:"at" example:"2026-05-14T09:30:13Z"`
	RequestsPerS float64          `json:"requests_per_s" example:"42.5" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64          `json:"limited_per_s" example:"0.5" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64            `json:"open_streams" example:"3" doc:"Streams open on this replica, this one included."`
	Gauges       map[string]int64 `json:"gauges" doc:"The gauges the server's features declare, by name (its properties list them): each an integer read at most once a second, the last value read while its source does not answer."`
	Goroutines   int              `json:"goroutines" example:"48"`
	HeapBytes    uint64           `json:"heap_bytes" example:"8388608" doc:"Bytes of live and not yet collected heap objects."`
}

func (p *Runtime) serveLive(st *Stream) {
	if st.Start() != nil {
		return
	}
	every := time.NewTicker(time.Second)
	defer every.Stop()
	Pump(st, every.C, func(time.Time, bool) error {
		return st.sendValue("", liveEvent.Name, p.live.snapshot(st.r.Context(), p))
	})
}

// liveSnapshots computes the snapshot at most once a second: one stream at
// a time reads the gauges, outside the lock, while the others send the last.
type liveSnapshots struct {
	mu             sync.Mutex
	last           LiveSnapshot
	requests, lims uint64
	reading        bool // a stream is reading the gauges
}

func (l *liveSnapshots) snapshot(ctx context.Context, p *Runtime) LiveSnapshot {
	s := p.s
	l.mu.Lock()
	if s.Now().Sub(l.last.At) < 900*time.Millisecond || l.reading {
		defer l.mu.Unlock()
		if l.last.Gauges == nil { // none read yet: each 0 (AddGauge), never null
			l.last.Gauges = make(map[string]int64, len(p.reg.gauges))
			for _, g := range p.reg.gauges {
				l.last.Gauges[g.name] = 0
			}
		}
		return l.last
	}
	l.reading = true
	last := l.last.Gauges
	l.mu.Unlock()
	gauges := readGauges(ctx, s, p.reg.gauges, last)
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

func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// AddGauge adds a gauge to GET /api/v1/system/live: gauges.name is what
// read returns (read at most once a second, with a second's deadline; the
// last value while it fails), and doc says what it counts. The name is
// snake_case, at most 64 bytes, added once. Call it from an api.Feature.
func AddGauge(s *api.Server, name, doc string, read func(ctx context.Context) (int64, error)) {
	reg := registryOf(s)
	if !gaugeName.MatchString(name) || slices.ContainsFunc(reg.gauges, func(g gauge) bool { return g.name == name }) {
		reg.errs = append(reg.errs, fmt.Errorf("streams: gauge %q is not a snake_case name of at most 64 bytes, or is added twice", name))
		return
	}
	reg.gauges = append(reg.gauges, gauge{name, doc, read})
	if reg.rt != nil { // the live stream is declared already
		declareGauges(s.API.OpenAPI().Components.Schemas, reg.gauges)
	}
}

type gauge struct {
	name, doc string
	read      func(ctx context.Context) (int64, error)
}

var gaugeName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func declareGauges(reg huma.Registry, gauges []gauge) {
	p := reg.Schema(reflect.TypeFor[LiveSnapshot](), false, liveEvent.Name).Properties["gauges"]
	p.Properties, p.Required = map[string]*huma.Schema{}, nil
	for _, g := range gauges {
		p.Properties[g.name] = &huma.Schema{Type: huma.TypeInteger, Format: "int64", Description: g.doc, Examples: []any{3}}
		p.Required = append(p.Required, g.name)
	}
}

// readGauges reads gauges; one that fails keeps its value in last, logged as an outage.
func readGauges(ctx context.Context, s *api.Server, gauges []gauge, last map[string]int64) map[string]int64 {
	values := make(map[string]int64, len(gauges))
	for _, g := range gauges {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		n, err := g.read(rctx)
		cancel()
		if err != nil {
			s.LogOutage(ctx, fmt.Errorf("gauge %s: %w", g.name, err))
			n = last[g.name]
		}
		values[g.name] = n
	}
	return values
}
