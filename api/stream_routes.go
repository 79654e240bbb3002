package api

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

// The events of GET /api/v1/events. A handler publishes one with
// publishEvent; the stream sends only the types its operation declares.
var (
	gapEvent  = EventType{Name: "stream.gap", Data: GapEvent{}, Doc: "Some of your events after `after` may be lost: reload what they would have changed. It is the first event when Last-Event-ID is older than the oldest event kept, or not one this server knows (after a restart, say); and it comes live, or replayed, when an outage of the event store cost events (with an id when it marks a place in the events, so a resume after it does not repeat it)."}
	liveEvent = EventType{Name: "system.live", Data: LiveSnapshot{}, Doc: "The server's state, every second."}
)

// GapEvent says events may have been lost between the last event the
// stream had and the events that follow.
type GapEvent struct {
	After string `json:"after" doc:"The id of the last event the stream had before the gap: the last one it sent, else the Last-Event-ID the client sent; empty when it had none."`
}

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time `json:"at"`
	RequestsPerS float64   `json:"requests_per_s" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64   `json:"limited_per_s" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64     `json:"open_streams" doc:"Streams open on this replica, this one included."`
	JobsQueued   int64     `json:"jobs_queued" doc:"Jobs of every user waiting for a worker, on every replica (the database's count, read at most once a second; the last count read while the database does not answer)."`
	Goroutines   int       `json:"goroutines"`
	HeapBytes    uint64    `json:"heap_bytes" doc:"Bytes of live and not yet collected heap objects."`
}

// addStreamRoutes registers every stream endpoint.
func (s *Server) addStreamRoutes(cfg Config) {
	tags := tagged(s.API, streamsTag, streamsTagDoc)
	s.addStream(StreamOperation{
		Operation: huma.Operation{
			OperationID: "follow-events", Path: Prefix + "/events", Tags: tags,
			Summary: "Follow your events",
			Description: "Your events as they happen, each with an id. On reconnect, send the last id received as Last-Event-ID (browsers do): " +
				"the events after it that are still kept come first, or stream.gap says some are lost. " +
				"Every stream endpoint shares the stream plane (x-rate-limit, plane stream): the open streams of your session or API key (streams), " +
				"those of your user, counting all of its sessions and API keys (streams-per-user), and the streams your session or API key may open (stream-opens); " +
				"past any of them a stream is refused with 429 before it starts.",
		},
		Events: append(slices.Clone(s.userEvents), gapEvent),
		Serve:  func(st *Stream) { s.serveEvents(st) },
	})
	who := "Any caller (a session or an API key) may follow it: it shows the server's load, not any user's data (" + product.EnvPrefix + "LIVE_ACCESS=admin restricts it to the user admin)."
	if cfg.LiveAccess == Admin {
		who = "Only the user admin may follow it (" + product.EnvPrefix + "LIVE_ACCESS=admin); any other caller gets 403."
	}
	s.addStream(StreamOperation{
		Operation: huma.Operation{
			OperationID: "follow-system-live", Path: Prefix + "/system/live", Tags: tags,
			Summary: "Follow the server's state",
			Description: "A snapshot of this replica every second: requests and refusals per second, open streams, jobs queued, goroutines, heap. " + who +
				" Shares the stream plane's caps and open budget with every stream endpoint.",
		},
		Access: cfg.LiveAccess,
		Events: []EventType{liveEvent},
		Serve:  func(st *Stream) { s.serveLive(st.st) },
	})
}

// serveEvents sends the caller's events: those kept after Last-Event-ID
// first, then each as it is published.
func (s *Server) serveEvents(st *Stream) {
	sub, ok := st.Subscribe()
	if !ok {
		return
	}
	defer sub.Close()
	if st.Start() != nil {
		return
	}
	if sub.Gap && st.st.sendGap("") != nil {
		return
	}
	for i := range sub.Replay {
		if st.SendEvent(&sub.Replay[i]) != nil {
			return
		}
	}
	Pump(st, sub.Events(), func(ev *streams.Event, ok bool) error {
		if !ok { // the hub dropped this stream: it fell behind
			st.CloseSlow()
			return errStreamEnded
		}
		return st.SendEvent(ev)
	})
}

// sendEvent sends one of the hub's events; its gap markers go out as
// stream.gap.
func (st *stream) sendEvent(ev *streams.Event) error {
	if ev.Type == streams.EventGap {
		return st.sendGap(ev.ID)
	}
	return st.send(ev.ID, ev.Type, ev.Data)
}

// sendGap tells the client that events after the last it has may be
// lost: stream.gap, with id when the hub marked the gap in its events. A
// gap right after another says nothing new, and is not sent.
func (st *stream) sendGap(id string) error {
	if st.gapped {
		return nil
	}
	b, err := json.Marshal(GapEvent{After: st.lastSent})
	if err != nil {
		return err
	}
	return st.send(id, gapEvent.Name, b)
}

// serveLive sends a snapshot every second.
func (s *Server) serveLive(st *stream) {
	if st.start() != nil {
		return
	}
	every := time.NewTicker(time.Second)
	defer every.Stop()
	pump(st, every.C, func(time.Time, bool) error {
		return st.sendValue(liveEvent.Name, s.live.snapshot(s))
	})
}

// liveSnapshots computes the snapshot at most once a second, whatever the
// number of streams that send it. The count of queued jobs is read outside
// its lock, by one stream at a time: while it is read, and when it cannot
// be, the streams go on with the last count.
type liveSnapshots struct {
	mu             sync.Mutex
	last           LiveSnapshot
	requests, lims uint64
	counting       bool // a stream is reading the count of queued jobs
}

func (l *liveSnapshots) snapshot(s *Server) LiveSnapshot {
	l.mu.Lock()
	if s.streams.now().Sub(l.last.At) < 900*time.Millisecond || l.counting {
		defer l.mu.Unlock()
		return l.last
	}
	l.counting = true
	queued := l.last.JobsQueued
	l.mu.Unlock()
	if s.queuedJobs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := s.queuedJobs(ctx)
		cancel()
		if err != nil {
			s.outages.log(ctx, err)
		} else {
			queued = n
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counting = false
	now := s.streams.now()
	elapsed := now.Sub(l.last.At)
	req, lim := s.traffic.requests.Load(), s.traffic.limited.Load()
	snap := LiveSnapshot{At: now.UTC(), OpenStreams: int64(s.streams.live()), JobsQueued: queued, Goroutines: runtime.NumGoroutine(), HeapBytes: heapBytes()}
	if !l.last.At.IsZero() && elapsed > 0 {
		snap.RequestsPerS = float64(req-l.requests) / elapsed.Seconds()
		snap.LimitedPerS = float64(lim-l.lims) / elapsed.Seconds()
	}
	l.last, l.requests, l.lims = snap, req, lim
	return snap
}

// heapBytes reads the heap's object bytes without stopping the world
// (runtime.ReadMemStats would).
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// publishEvent publishes an event of type e to user's streams. An event
// that cannot be published is logged and lost: the request that caused it
// has succeeded, and a stream that missed it learns so on reconnect
// (stream.gap) or reloads.
func publishEvent(ctx context.Context, hub streams.Hub, e EventType, user string, data any) {
	if reflect.TypeOf(data) != reflect.TypeOf(e.Data) {
		logger(ctx).Error("stream: an event's data is not its declared type", "event", e.Name)
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		_, err = hub.Publish(context.WithoutCancel(ctx), streams.Event{Type: e.Name, To: user, Data: b})
	}
	if err != nil {
		logger(ctx).Warn("stream: an event was not published", "event", e.Name, "error", err)
	}
}
