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

var liveEvent = EventType{Name: "system.live", Data: LiveSnapshot{}, Doc: "The server's state, every second: a new stream gets those of the last five minutes first, oldest first."}

const historyLen = 300 // the snapshots kept for new live streams: five minutes at one a second

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time        `json:"at" example:"2026-05-14T09:30:13Z"`
	RequestsPerS float64          `json:"requests_per_s" example:"42.5" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64          `json:"limited_per_s" example:"0.5" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64            `json:"open_streams" example:"3" doc:"Streams open on this replica."`
	Gauges       map[string]int64 `json:"gauges" doc:"The gauges the server's features declare, by name (its properties list them): each an integer read once a second, the last value read while its source does not answer."`
	Goroutines   int              `json:"goroutines" example:"48"`
	HeapBytes    uint64           `json:"heap_bytes" example:"8388608" doc:"Bytes of live and not yet collected heap objects."`
}

// serveLive sends the snapshots kept, then each new one.
func (p *Runtime) serveLive(st *Stream) {
	var sent time.Time // the last sent's
	send := func(time.Time, bool) error {
		for _, snap := range p.live.since(sent) {
			if err := st.sendValue("", liveEvent.Name, snap); err != nil {
				return err
			}
			sent = snap.At
		}
		return nil
	}
	if st.Start() == nil && send(sent, true) == nil {
		Pump(st, time.Tick(time.Second), send)
	}
}

// record takes a snapshot each second, streams open or not, until CloseStreams.
func (p *Runtime) record(ctx context.Context) {
	for tick := time.Tick(time.Second); ; {
		select {
		case <-tick:
			p.live.take(ctx, p)
		case <-p.closing:
			return
		}
	}
}

// liveSnapshots are the last snapshots, which streams read while the next
// is taken: a gauge that stalls delays it, never a stream.
type liveSnapshots struct {
	mu             sync.Mutex
	history        []LiveSnapshot // oldest first, at most historyLen
	last           LiveSnapshot
	requests, lims uint64 // s.Traffic() at the last
}

// since returns the snapshots taken after t, oldest first.
func (l *liveSnapshots) since(t time.Time) []LiveSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.history)
	for i > 0 && l.history[i-1].At.After(t) {
		i--
	}
	return slices.Clone(l.history[i:])
}

// take adds a snapshot of now, unless the last is not older (a test's
// clock that has not moved, a clock stepped back).
func (l *liveSnapshots) take(ctx context.Context, p *Runtime) {
	s, now := p.s, p.s.Now().UTC()
	l.mu.Lock() // AddGauge may append to reg.gauges under it
	gauges, last := p.reg.gauges, l.last.Gauges
	l.mu.Unlock()
	snap := LiveSnapshot{At: now, OpenStreams: int64(p.count()), Gauges: readGauges(ctx, s, gauges, last),
		Goroutines: runtime.NumGoroutine()}
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	snap.HeapBytes = heap[0].Value.Uint64()
	req, lim := s.Traffic()
	l.mu.Lock()
	defer l.mu.Unlock()
	if elapsed := now.Sub(l.last.At); elapsed <= 0 {
		return
	} else if !l.last.At.IsZero() {
		snap.RequestsPerS = float64(req-l.requests) / elapsed.Seconds()
		snap.LimitedPerS = float64(lim-l.lims) / elapsed.Seconds()
	}
	l.last, l.requests, l.lims = snap, req, lim
	l.history = append(l.history[max(0, len(l.history)+1-historyLen):], snap)
}

// AddGauge adds a gauge to GET /api/v1/system/live: gauges.name is what
// read returns (read once a second, with a second's deadline; the
// last value while it fails), and doc says what it counts. The name is
// snake_case, at most 64 bytes, added once. Call it from an api.Feature.
func AddGauge(s *api.Server, name, doc string, read func(ctx context.Context) (int64, error)) {
	reg := registryOf(s)
	if !gaugeName.MatchString(name) || slices.ContainsFunc(reg.gauges, func(g gauge) bool { return g.name == name }) {
		reg.errs = append(reg.errs, fmt.Errorf("streams: gauge %q is not a snake_case name of at most 64 bytes, or is added twice", name))
		return
	}
	if reg.rt != nil { // snapshots are taken: under their lock
		reg.rt.live.mu.Lock()
		defer reg.rt.live.mu.Unlock()
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
	p.Properties, p.Required, p.Examples = map[string]*huma.Schema{}, nil, []any{map[string]int64{}} // {} with none
	for _, g := range gauges {
		p.Properties[g.name] = &huma.Schema{Type: huma.TypeInteger, Format: "int64", Description: g.doc}
		p.Required = append(p.Required, g.name)
		p.Examples[0].(map[string]int64)[g.name] = 3
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
