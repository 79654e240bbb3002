package streams

import (
	"errors"
	"fmt"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
)

// An Operation is a stream endpoint: its operation as the spec shows it,
// who may open it (api.Caller when empty), every event type it may send,
// and Serve, which writes events until the stream ends. Declare it with
// [Add].
type Operation struct {
	Operation huma.Operation
	Access    api.Access // api.Caller when empty
	Events    []EventType
	Serve     func(st *Stream)
}

// Add declares a stream operation on s and mounts its GET and HEAD behind
// the plane's door (the caller, the caps, the open budgets, the
// Last-Event-ID). An operation without Tags is tagged Streams. Call it
// from an api.Feature, before or after the plane's; s.Err reports a
// stream no plane serves.
func Add(s *api.Server, op Operation) {
	if len(op.Operation.Tags) == 0 {
		op.Operation.Tags = api.Tag(s.API, tag, tagDoc)
	}
	d := doorOf(s)
	if d.plane == nil {
		d.pending = append(d.pending, op)
		return
	}
	d.plane.add(op)
}

const tag, tagDoc = "Streams", "Server-Sent Events: your events, the server's state, and what the features stream, live."

// DeclareEvents adds events to those a user's GET /api/v1/events may
// carry. Call it from an api.Feature, before or after the plane's.
func DeclareEvents(s *api.Server, events ...EventType) {
	d := doorOf(s)
	d.userEvents = append(d.userEvents, events...)
	if d.events != nil { // the events stream is declared already: it carries these too
		d.events.declare(events...)
	}
}

// A door is the stream state of one api.Server (its Extension): its plane
// once the plane's Feature ran, what features declared, and the mistakes
// s.Err reports.
type door struct {
	plane *Plane
	// pending are the streams added before the plane came; userEvents are
	// the events of GET /api/v1/events, and events that stream once declared.
	pending    []Operation
	userEvents []EventType
	events     *declared
	gauges     []gauge // the live snapshot's, in order
	errs       []error
}

type doorKey struct{}

func doorOf(s *api.Server) *door {
	return s.Extension(doorKey{}, func() api.Extension { return &door{} }).(*door)
}

func (d *door) Err() error {
	errs := d.errs
	if d.plane == nil && (len(d.pending) > 0 || len(d.userEvents) > 0 || len(d.gauges) > 0) {
		errs = append(errs, fmt.Errorf("streams: %d stream operations, %d event types and %d gauges are declared, but no stream plane serves them: add a plane's Feature (streams.New(cfg).Feature) to api.Config.Features", len(d.pending), len(d.userEvents), len(d.gauges)))
	}
	return errors.Join(errs...)
}
