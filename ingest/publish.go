// This file declares the memory example's events, which a user's
// GET /api/v1/events carries and a job's log follows, and publishes them.
package ingest

import (
	"context"

	"github.com/brain-template/brain/streams"
)

// The job events, on GET /api/v1/events and on each job's log.
var (
	jobQueued      = streams.EventType{Name: EventJobQueued, Data: JobQueued{}, Doc: "A batch you sent was accepted: its job is queued."}
	jobProgress    = streams.EventType{Name: EventJobProgress, Data: JobProgress{}, Doc: "A job stored more of its items. On a job's log opened without Last-Event-ID, the first event gives its state when the stream started, with an id to resume from like any other."}
	jobSucceeded   = streams.EventType{Name: EventJobSucceeded, Data: JobSucceeded{}, Doc: "A job stored all of its items. On a job's log, the last event."}
	jobFailed      = streams.EventType{Name: EventJobFailed, Data: JobFailed{}, Doc: "A job ended without storing all of its items. On a job's log, the last event."}
	memoryIngested = streams.EventType{Name: EventMemoryIngested, Data: MemoryIngested{}, Doc: "A project has new items to find."}
)

// events are the events the feature adds to GET /api/v1/events.
var events = []streams.EventType{jobQueued, jobProgress, jobSucceeded, jobFailed, memoryIngested}

// Publisher returns the function that publishes a user's ingest events to
// hub (Config.Publish): an event of a type the feature does not
// declare, or whose data is not its declared type, is logged and dropped.
func Publisher(hub streams.Hub) func(ctx context.Context, userID, eventType string, data any) {
	return streams.Publisher(hub, events...)
}
