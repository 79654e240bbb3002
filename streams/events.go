package streams

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/brain-template/brain/api"
)

// An EventType is one kind of event a stream may send: its name (the SSE
// event field), a value of its data's type, and what it means.
type EventType struct {
	Name string
	Data any
	Doc  string
}

// ClosingEvent is the data of the stream.closing event, a stream's last.
type ClosingEvent struct {
	Reason string `json:"reason" enum:"shutdown,slow,unauthenticated,unavailable" doc:"shutdown: the server is stopping (reconnect to another replica, or later); slow: the client read too slowly and fell behind; unauthenticated: the stream's credentials no longer hold (logged out, key deleted, session expired); unavailable: a store the stream needs failed (its slot was lost in an outage and others took its place, or what it follows could not be read again after a gap): reconnect."`
}

// GapEvent is the data of the stream.gap event.
type GapEvent struct {
	After string `json:"after" example:"1778751009876-2" doc:"The id of the last event the stream had before the gap: the last one it sent, else the Last-Event-ID the client sent; empty when it had none."`
}

var (
	closingEvent = EventType{Name: "stream.closing", Data: ClosingEvent{}, Doc: "The stream's last event: the server closes it, for the reason given."}
	gapEvent     = EventType{Name: EventGap, Data: GapEvent{}, Doc: "Some of your events after `after` may be lost: reload what they would have changed. It is the first event when Last-Event-ID is older than the oldest event kept, or not one this server knows (after a restart, say); and it comes live, or replayed, when an outage of the event store cost events (with an id when it marks a place in the events, so a resume after it does not repeat it)."}
)

// Publish publishes an event of type e with data to user's streams on hub.
// Data not of e's type, and an event not published, are logged and dropped.
func Publish(ctx context.Context, hub Hub, e EventType, user string, data any) {
	if reflect.TypeOf(data) != reflect.TypeOf(e.Data) {
		api.Logger(ctx).Error("stream: an event's data is not its declared type", "event", e.Name)
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		_, err = hub.Publish(context.WithoutCancel(ctx), Event{Type: e.Name, To: user, Data: b})
	}
	if err != nil {
		api.Logger(ctx).Warn("stream: an event was not published", "event", e.Name, "error", err)
	}
}

// Publisher returns a [Publish] of one of events by name; others are logged and dropped.
func Publisher(hub Hub, events ...EventType) func(ctx context.Context, user, event string, data any) {
	byName := make(map[string]EventType, len(events))
	for _, e := range events {
		byName[e.Name] = e
	}
	return func(ctx context.Context, user, name string, data any) {
		e, ok := byName[name]
		if !ok {
			api.Logger(ctx).Error("stream: an event of a type no stream declares", "event", name)
			return
		}
		Publish(ctx, hub, e, user, data)
	}
}
