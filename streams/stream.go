package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
)

// A Stream is one open SSE response, as its operation's Serve sees it:
// until [Stream.Start] it may still be refused; after, it sends events
// until Serve returns. On HTTP/1.x a started stream takes its connection
// over from net/http, freeing net/http's goroutines and buffers.
type Stream struct {
	rt             *Runtime
	slot, userSlot capSlot // the caller's and its user's
	w              http.ResponseWriter
	c              *sseConn
	r              *http.Request // with the stream's context, which cancel ends
	cancel         context.CancelFunc
	unfollow       func() bool // stops the context from ending with the request's
	caller         *auth.Identity
	lastEventID    string
	lastSent       string // the id of the last event sent, else lastEventID
	gapped         bool   // the last event sent was stream.gap
	declared       map[string]bool
	opened         time.Time
	probe          chan struct{} // asks for a heartbeat now (Runtime.poke)
	// handedOff is closed once the handler may return; panicked is a panic
	// of serve before then, for the handler to raise.
	handedOff chan struct{}
	panicked  any
	started   bool // its 200 is sent
	head      bool // a HEAD: Start sends the 200's headers, and ends the stream
}

// ErrEnded is what a [Pump]'s send returns to end its stream.
var ErrEnded = errors.New("streams: the stream ended")

// Request is the stream's request; its context ends with the stream.
func (st *Stream) Request() *http.Request { return st.r }

// Caller is who opened the stream.
func (st *Stream) Caller() *auth.Identity { return st.caller }

// LastEventID is the Last-Event-ID the client sent, checked; "" for none.
func (st *Stream) LastEventID() string { return st.lastEventID }

// LastSent is the id of the last event sent, else LastEventID.
func (st *Stream) LastSent() string { return st.lastSent }

// Subscribe follows the caller's user's events after LastEventID; when the
// hub fails it answers 503 and returns false.
func (st *Stream) Subscribe() (*Subscription, bool) {
	sub, err := st.rt.cfg.Hub.Subscribe(st.r.Context(), st.caller.User.ID, st.lastEventID)
	if err != nil {
		st.rt.s.LogOutage(st.r.Context(), err)
		st.Refuse(api.NewError(http.StatusServiceUnavailable, product.Name+" cannot follow events right now; retry shortly"))
		return nil, false
	}
	return sub, true
}

// Refuse answers e instead of a stream. Call it before Start only.
func (st *Stream) Refuse(e *api.Error) { st.rt.s.Refuse(st.w, st.r, e) }

// NoContent answers 204 instead of a stream (EventSource stops reconnecting).
func (st *Stream) NoContent() { st.w.WriteHeader(http.StatusNoContent) }

// Unavailable reports that a store the stream needs failed with err: before
// Start it answers 503; after, it logs err and ends the stream (unavailable).
func (st *Stream) Unavailable(err error) {
	if st.started {
		st.rt.s.LogOutage(st.r.Context(), err)
		st.close("unavailable")
		return
	}
	var e *api.Error
	errors.As(api.StoreError(err), &e)
	st.Refuse(e)
}

// Start sends the stream's headers and its retry hint, and takes the
// connection over where it can. An error ends the stream (as a HEAD does).
func (st *Stream) Start() error {
	st.started = true
	if st.head {
		st.c.Head()
		return ErrEnded
	}
	return st.c.Start(retry, func() {
		st.unfollow()
		close(st.handedOff) // the handler may return: st.w is not used again
	}, st.cancel)
}

// Send sends one event of a type the operation declares (others are
// logged and dropped), with id ("" for none) and JSON data.
func (st *Stream) Send(id, event string, data json.RawMessage) error {
	if !st.declared[event] {
		api.Logger(st.r.Context()).Error("stream: dropped an event its operation does not declare", "event", event)
		return nil
	}
	msg, err := appendEvent(nil, id, event, data)
	if err != nil {
		api.Logger(st.r.Context()).Error("stream: dropped an event whose data is not JSON", "event", event)
		return nil
	}
	if id != "" {
		st.lastSent = id
	}
	st.gapped = event == gapEvent.Name
	return st.c.Write(msg)
}

// SendEvent sends one of the hub's events.
func (st *Stream) SendEvent(ev *Event) error {
	if ev.Type == EventGap {
		return st.sendGap(ev.ID)
	}
	return st.Send(ev.ID, ev.Type, ev.Data)
}

// sendGap sends stream.gap (with id when the hub marked it), unless the last event was one.
func (st *Stream) sendGap(id string) error {
	if st.gapped {
		return nil
	}
	return st.sendValue(id, gapEvent.Name, GapEvent{After: st.lastSent})
}

func (st *Stream) sendValue(id, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.Send(id, event, b)
}

// CloseSlow ends a stream the hub dropped with stream.closing (slow).
func (st *Stream) CloseSlow() { st.close("slow") }

// Pump is the loop of a started stream: each value from source goes to
// send (ok false once source is closed), with heartbeats, until the client
// leaves, the server shuts down, or send returns an error (ErrEnded, say).
func Pump[T any](st *Stream, source <-chan T, send func(v T, ok bool) error) {
	loop(st.r.Context(), st.rt.cfg.Heartbeat, st.rt.closing, st.probe, source, send, st.beat,
		func() error { return st.c.Write(heartbeatLine) }, func() { st.close("shutdown") })
}

// serve runs serve on a goroutine of its own, and returns once the stream
// has its connection or has ended; a panic before then is raised here.
func (st *Stream) serve(serve func(*Stream)) {
	st.handedOff = make(chan struct{})
	go func() {
		defer func() {
			v := recover()
			if v != nil && st.started {
				api.Logger(st.r.Context()).Error("stream: panic", "panic", v, "stack", string(debug.Stack()))
			} else if v != nil {
				st.panicked = fmt.Sprintf("%v\n\nin the stream's goroutine:\n%s", v, debug.Stack())
			}
			st.finish()
		}()
		serve(st)
	}()
	<-st.handedOff
	if st.panicked != nil {
		panic(st.panicked)
	}
}

// beat ends a stream whose client stopped taking data or whose
// credentials no longer hold, else writes a heartbeat and renews its slots.
func (st *Stream) beat() error {
	if st.c.Stalled() {
		st.c.setWriteDeadline(time.Now()) // nothing more will be taken: do not wait to finish the response
		return ErrEnded
	}
	if !st.callerHolds() {
		st.close("unauthenticated")
		return ErrEnded
	}
	if err := st.c.Beat(); err != nil {
		return err
	}
	return st.renew()
}

// callerHolds reports whether the credentials still name the caller; a failing store says yes.
func (st *Stream) callerHolds() bool {
	id, err := st.rt.s.Authenticate(st.r.Context(), st.r)
	if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		return true
	}
	return id != nil && capKey(id) == capKey(st.caller)
}

// renew extends the slots: a slot lost ends the stream, other failures are logged.
func (st *Stream) renew() error {
	for _, slot := range []capSlot{st.slot, st.userSlot} {
		err := slot.refresh(st.r.Context())
		if errors.Is(err, errSlotLost) {
			st.close("unavailable")
			return err
		}
		if err != nil {
			api.Logger(st.r.Context()).Warn("stream: its slot was not renewed; retrying at the next heartbeat", "error", err)
		}
	}
	return nil
}

// close sends the stream's last event.
func (st *Stream) close(reason string) {
	_ = st.sendValue("", closingEvent.Name, ClosingEvent{Reason: reason})
}

// finish frees the slots, closes the connection taken and lets the handler return.
func (st *Stream) finish() {
	st.cancel()
	st.slot.release()
	st.userSlot.release()
	if st.c.Close() {
		api.Logger(st.r.Context()).LogAttrs(context.Background(), slog.LevelInfo, "stream ended",
			slog.String("path", st.r.URL.Path), slog.Int64("bytes", st.c.Written()), slog.Duration("duration", st.rt.s.Now().Sub(st.opened)))
	} else if st.handedOff != nil {
		close(st.handedOff)
	}
	st.rt.leave(st)
}
