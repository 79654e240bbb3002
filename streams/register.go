package streams

import (
	"errors"
	"fmt"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
)

// An Operation is a stream endpoint: its operation as the spec shows it,
// who may open it, every event type it may send, and Serve, which writes
// events until the stream ends. Declare it with [Add].
type Operation struct {
	Operation huma.Operation
	Access    api.Access // api.Caller when empty
	Events    []EventType
	Serve     func(st *Stream)
}

// Add declares a stream operation on s and mounts its GET and HEAD behind
// the streams' admission (the caller, the caps, the open budgets, the
// Last-Event-ID). An operation without Tags is tagged Streams. Call it from
// an api.Feature, before or after the runtime's.
func Add(s *api.Server, op Operation) {
	if len(op.Operation.Tags) == 0 {
		op.Operation.Tags = api.Tag(s.API, tag, tagDoc)
	}
	reg := registryOf(s)
	if reg.rt == nil {
		reg.pending = append(reg.pending, op)
		return
	}
	reg.rt.add(op)
}

const tag, tagDoc = "Streams", "Server-Sent Events: your events, the server's state, and what the features stream, live."

// DeclareEvents adds events to those a user's GET /api/v1/events may
// carry. Call it from an api.Feature, before or after the runtime's.
func DeclareEvents(s *api.Server, events ...EventType) {
	reg := registryOf(s)
	reg.userEvents = append(reg.userEvents, events...)
	if reg.events != nil { // the events stream is declared already
		reg.events.declare(events...)
	}
}

// A registry is the stream state of one api.Server (its Extension): its
// runtime once the runtime's Feature ran, what features declared, and the
// mistakes s.Err reports.
type registry struct {
	rt         *Runtime
	pending    []Operation // added before the runtime came
	userEvents []EventType // GET /api/v1/events', which events declares once added
	events     *declared
	gauges     []gauge // the live snapshot's, in order
	errs       []error
}

type registryKey struct{}

func registryOf(s *api.Server) *registry {
	return s.Extension(registryKey{}, func() api.Extension { return &registry{} }).(*registry)
}

func (reg *registry) Err() error {
	errs := reg.errs
	if reg.rt == nil && (len(reg.pending) > 0 || len(reg.userEvents) > 0 || len(reg.gauges) > 0) {
		errs = append(errs, fmt.Errorf("streams: %d stream operations, %d event types and %d gauges are declared, but no streams runtime serves them: add its Feature (streams.New(cfg).Feature) to api.Config.Features", len(reg.pending), len(reg.userEvents), len(reg.gauges)))
	}
	return errors.Join(errs...)
}
