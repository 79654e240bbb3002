package streams

import (
	"errors"
	"fmt"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
)

// An Operation is a stream endpoint: its operation (id, path, summary,
// description, tags, parameters, other responses) as the spec shows it,
// who may open it, every event type it may send, and Serve, which writes
// events until the stream ends. Declare it with [Add].
type Operation struct {
	Operation huma.Operation
	Access    api.Access // api.Caller when empty
	Events    []EventType
	Serve     func(st *Stream)
}

// Add declares a stream operation on s and mounts it: GET and HEAD on
// op.Operation.Path, behind the stream plane's door (the caller's
// resolution, Last-Event-ID's check, the caps, the open budget), each of
// its messages one of op.Events or stream.closing. An operation without
// Tags is tagged Streams. Call it from an api.Feature: before or after
// the plane's own ([Plane.Feature]), which serves what was added before
// it once it comes; a stream added to a server no plane serves is
// reported by s.Err.
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

// The spec's tag of every stream operation.
const tag, tagDoc = "Streams", "Server-Sent Events: your events, the server's state, and what the features stream, live."

// DeclareEvents adds events to those a user's GET /api/v1/events may
// carry, and to the spec's schema of its messages. Call it from an
// api.Feature, before or after the plane's.
func DeclareEvents(s *api.Server, events ...EventType) {
	d := doorOf(s)
	d.userEvents = append(d.userEvents, events...)
	if d.events != nil { // the events stream is declared already: it carries these too
		d.events.declare(events...)
	}
}

// A door is the stream door of one api.Server, kept on it
// (api.Server.Extension): the plane that serves it once the plane's
// Feature ran, what the features declared meanwhile, and the mistakes
// found, which s.Err reports.
type door struct {
	plane *Plane
	// pending are the streams added before the plane came.
	pending []Operation
	// userEvents are the events the features declared for
	// GET /api/v1/events; events is that stream, once declared.
	userEvents []EventType
	events     *declared
	// gauges are the live snapshot's gauges (AddGauge), in order.
	gauges []gauge
	errs   []error
}

// doorKey is the key of a server's door among its extensions.
type doorKey struct{}

// doorOf returns s's door, made on the first call.
func doorOf(s *api.Server) *door {
	return s.Extension(doorKey{}, func() api.Extension { return &door{} }).(*door)
}

// Err reports the door's mistakes: streams, events or gauges declared on
// a server no plane serves, a plane added twice, caps that contradict
// each other, a gauge's name that is none, a stream whose messages'
// schema has the name of another.
func (d *door) Err() error {
	errs := d.errs
	if d.plane == nil && (len(d.pending) > 0 || len(d.userEvents) > 0 || len(d.gauges) > 0) {
		errs = append(errs, fmt.Errorf("streams: %d stream operations, %d event types and %d gauges are declared, but no stream plane serves them: add a plane's Feature (streams.New(cfg).Feature) to api.Config.Features", len(d.pending), len(d.userEvents), len(d.gauges)))
	}
	return errors.Join(errs...)
}
