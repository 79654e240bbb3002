// This file is the stream front door for features: how a package outside
// api declares a stream operation, the events of GET /api/v1/events, and
// publishes events, and what its serve function may do with its stream.
package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/streams"
)

// streamsTag is the spec's tag of every stream operation.
const streamsTag, streamsTagDoc = "Streams", "Server-Sent Events: your events, a job's progress, the server's state, live."

// AddStream declares a stream operation and mounts it: GET and HEAD on
// so.Operation.Path, behind the stream plane (its caps, its open budget,
// the caller's resolution, Last-Event-ID's check), each of its messages
// one of so.Events or stream.closing. An operation without Tags is
// tagged Streams.
func (s *Server) AddStream(so StreamOperation) {
	if len(so.Operation.Tags) == 0 {
		so.Operation.Tags = tagged(s.API, streamsTag, streamsTagDoc)
	}
	s.addStream(so)
}

// DeclareEvents adds events to those a user's GET /api/v1/events may
// carry. Call it from a [Feature]: the events stream is declared after
// the features.
func (s *Server) DeclareEvents(events ...EventType) { s.userEvents = append(s.userEvents, events...) }

// PublishEvent publishes an event of type e with data to user's streams
// on hub. Data whose type is not e's is logged and dropped; so is an event
// that cannot be published: the request that caused it has succeeded, and
// a stream that missed it learns so on reconnect (stream.gap) or reloads.
func PublishEvent(ctx context.Context, hub streams.Hub, e EventType, user string, data any) {
	publishEvent(ctx, hub, e, user, data)
}

// Stream is one open stream, as its operation's Serve sees it. Until
// [Stream.Start] it may still be refused (Refuse, NoContent,
// Unavailable); after, it sends events until Serve returns.
type Stream struct {
	st  *stream
	srv *Server
}

// Request is the stream's request; its context ends with the stream.
func (s *Stream) Request() *http.Request { return s.st.r }

// Caller is who opened the stream.
func (s *Stream) Caller() *auth.Identity { return s.st.caller }

// LastEventID is the Last-Event-ID the client sent, checked; "" for none.
func (s *Stream) LastEventID() string { return s.st.lastEventID }

// LastSent is the id of the last event sent, else LastEventID.
func (s *Stream) LastSent() string { return s.st.lastSent }

// Subscribe subscribes to the caller's user's events after LastEventID.
// When the hub fails it logs why, answers 503, and returns false.
func (s *Stream) Subscribe() (*streams.Subscription, bool) {
	sub, err := s.srv.streams.cfg.Hub.Subscribe(s.st.r.Context(), s.st.caller.User.ID, s.st.lastEventID)
	if err != nil {
		s.srv.outages.log(s.st.r.Context(), err)
		WriteError(s.st.w, NewError(http.StatusServiceUnavailable, product.Name+" cannot follow events right now; retry shortly"))
		return nil, false
	}
	return sub, true
}

// Refuse answers e instead of a stream. Call it before Start only.
func (s *Stream) Refuse(e *Error) { WriteError(s.st.w, e) }

// NoContent answers 204 instead of a stream: there is nothing to follow
// (a browser's EventSource then stops reconnecting). Before Start only.
func (s *Stream) NoContent() { s.st.w.WriteHeader(http.StatusNoContent) }

// Unavailable reports that a store the stream needs failed with err,
// which is logged, never sent. Before Start it answers 503, as
// [StoreError] does; after, it ends the stream with stream.closing
// (unavailable), and the client reconnects.
func (s *Stream) Unavailable(err error) {
	s.srv.outages.log(s.st.r.Context(), err)
	if s.st.started {
		s.st.close("unavailable")
		return
	}
	WriteError(s.st.w, NewError(http.StatusServiceUnavailable, msgStoreUnavailable))
}

// Start sends the stream's headers: from here on it sends events. An
// error ends the stream (a HEAD request ends here).
func (s *Stream) Start() error { return s.st.start() }

// Send sends one event of a declared type, with id ("" for none) and
// data as JSON.
func (s *Stream) Send(id, event string, data json.RawMessage) error {
	return s.st.send(id, event, data)
}

// SendEvent sends one of the hub's events; its gap markers go out as
// stream.gap.
func (s *Stream) SendEvent(ev *streams.Event) error { return s.st.sendEvent(ev) }

// CloseSlow ends a stream that fell behind (the hub dropped it) with
// stream.closing (slow).
func (s *Stream) CloseSlow() { s.st.close("slow") }

// ErrStreamEnded is what a Pump's send returns to end its stream.
var ErrStreamEnded = errStreamEnded

// Pump is the loop of a started stream: each value from source goes to
// send (ok false once source is closed), and a heartbeat goes out when
// due, until the client leaves, the server shuts down (stream.closing),
// or send returns an error (ErrStreamEnded to end the stream).
func Pump[T any](s *Stream, source <-chan T, send func(v T, ok bool) error) { pump(s.st, source, send) }
