package api

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

// The events of GET /api/v1/events. A handler publishes one with
// publishEvent; the stream sends only the types its operation declares.
var (
	apiKeyCreated = eventType{name: "apikey.created", data: APIKeyView{}, doc: "You created an API key (its secret is never sent again)."}
	apiKeyDeleted = eventType{name: "apikey.deleted", data: DeletedEvent{}, doc: "You deleted an API key."}
	gapEvent      = eventType{name: "stream.gap", data: GapEvent{}, doc: "The first event when Last-Event-ID is older than the oldest event kept, or not one this server knows (after a restart, say): some events after it may be lost. Reload what they would have changed."}
	liveEvent     = eventType{name: "system.live", data: LiveSnapshot{}, doc: "The server's state, every second."}
)

// DeletedEvent names what was deleted.
type DeletedEvent struct {
	ID string `json:"id" doc:"The id of what was deleted."`
}

// GapEvent says events were lost between a reconnect's Last-Event-ID and
// the events that follow.
type GapEvent struct {
	After string `json:"after" doc:"The Last-Event-ID the client sent."`
}

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time `json:"at"`
	RequestsPerS float64   `json:"requests_per_s" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64   `json:"limited_per_s" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64     `json:"open_streams" doc:"Streams open on this replica, this one included."`
	Goroutines   int       `json:"goroutines"`
	HeapBytes    uint64    `json:"heap_bytes" doc:"Bytes of live and not yet collected heap objects."`
}

// addStreamRoutes registers every stream endpoint.
func (s *Server) addStreamRoutes(cfg Config) {
	tags := []string{"Streams"}
	s.addStream(streamOperation{
		op: huma.Operation{
			OperationID: "follow-events", Path: Prefix + "/events", Tags: tags,
			Summary: "Follow your events",
			Description: "Your events as they happen, each with an id. On reconnect, send the last id received as Last-Event-ID (browsers do): " +
				"the events after it that are still kept come first, or stream.gap says some are lost. " +
				"Every stream endpoint shares your cap of open streams (x-rate-limit, plane stream): one more is refused with 429 before the stream starts.",
		},
		events: []eventType{apiKeyCreated, apiKeyDeleted, gapEvent},
		serve:  s.serveEvents,
	})
	s.addStream(streamOperation{
		op: huma.Operation{
			OperationID: "follow-system-live", Path: Prefix + "/system/live", Tags: tags,
			Summary:     "Follow the server's state",
			Description: "A snapshot of this replica every second: requests and refusals per second, open streams, goroutines, heap. Shares the cap of open streams with every stream endpoint.",
		},
		events: []eventType{liveEvent},
		serve:  s.serveLive,
	})
}

// serveEvents sends the caller's events: those kept after Last-Event-ID
// first, then each as it is published.
func (s *Server) serveEvents(st *stream) {
	sub, err := s.streams.cfg.Hub.Subscribe(st.r.Context(), st.caller.User.ID, st.lastEventID)
	if err != nil {
		s.outages.log(st.r.Context(), err)
		WriteError(st.w, NewError(503, "brain cannot follow events right now; retry shortly"))
		return
	}
	defer sub.Close()
	if st.start() != nil {
		return
	}
	if sub.Gap && st.sendValue(gapEvent.name, GapEvent{After: st.lastEventID}) != nil {
		return
	}
	for _, ev := range sub.Replay {
		if st.send(ev.ID, ev.Type, ev.Data) != nil {
			return
		}
	}
	pump(st, sub.Events(), func(ev *streams.Event, ok bool) error {
		if !ok { // the hub dropped this stream: it fell behind
			st.close("slow")
			return errStreamEnded
		}
		return st.send(ev.ID, ev.Type, ev.Data)
	})
}

// serveLive sends a snapshot every second.
func (s *Server) serveLive(st *stream) {
	if st.start() != nil {
		return
	}
	every := time.NewTicker(time.Second)
	defer every.Stop()
	pump(st, every.C, func(time.Time, bool) error {
		return st.sendValue(liveEvent.name, s.live.snapshot(s))
	})
}

// liveSnapshots computes the snapshot at most once a second, whatever the
// number of streams that send it.
type liveSnapshots struct {
	mu             sync.Mutex
	last           LiveSnapshot
	requests, lims uint64
}

func (l *liveSnapshots) snapshot(s *Server) LiveSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := s.streams.now()
	elapsed := now.Sub(l.last.At)
	if elapsed < 900*time.Millisecond {
		return l.last
	}
	req, lim := s.traffic.requests.Load(), s.traffic.limited.Load()
	snap := LiveSnapshot{At: now.UTC(), OpenStreams: s.streams.live.Load(), Goroutines: runtime.NumGoroutine(), HeapBytes: heapBytes()}
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
func publishEvent(ctx context.Context, hub streams.Hub, e eventType, user string, data any) {
	if reflect.TypeOf(data) != reflect.TypeOf(e.data) {
		logger(ctx).Error("stream: an event's data is not its declared type", "event", e.name)
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		_, err = hub.Publish(context.WithoutCancel(ctx), streams.Event{Type: e.name, To: user, Data: b})
	}
	if err != nil {
		logger(ctx).Warn("stream: an event was not published", "event", e.name, "error", err)
	}
}
