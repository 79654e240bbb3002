package ingest

import (
	"context"

	"github.com/brain-template/brain/streams"
)

// The events the [Service] publishes to the job's user; their data types follow.
const (
	EventJobQueued      = "job.queued"      // a batch was accepted (not on a replay)
	EventJobProgress    = "job.progress"    // a job stored more of its items
	EventJobSucceeded   = "job.succeeded"   // a job stored all of its items
	EventJobFailed      = "job.failed"      // a job ended without storing all its items
	EventMemoryIngested = "memory.ingested" // a project has new items, after job.succeeded
)

// JobQueued is the data of a job.queued event.
type JobQueued struct {
	JobID      string `json:"job_id" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The new job."`
	IngestID   string `json:"ingest_id" example:"b3e0fb18a86d443c6eab8b59d9ca5b3fef1d379f0d5e7244fb5c83727abbeafd" doc:"The batch's idempotency key."`
	Project    string `json:"project" example:"garden" doc:"The project the items go to."`
	ItemsTotal int    `json:"items_total" example:"1" doc:"How many items the batch has."`
}

// JobProgress is the data of a job.progress event.
type JobProgress struct {
	JobID      string `json:"job_id" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The job."`
	ItemsDone  int    `json:"items_done" example:"1" doc:"How many of its items are stored."`
	ItemsTotal int    `json:"items_total" example:"1" doc:"How many items the batch has."`
}

// JobSucceeded is the data of a job.succeeded event.
type JobSucceeded struct {
	JobID      string `json:"job_id" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The job."`
	ItemsTotal int    `json:"items_total" example:"1" doc:"How many items it stored."`
}

// JobFailed is the data of a job.failed event.
type JobFailed struct {
	JobID     string `json:"job_id" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The job."`
	ItemsDone int    `json:"items_done" example:"0" doc:"How many of its items were stored and stay."`
	Error     string `json:"error" example:"gave up after repeated failures: the database did not answer" doc:"Why it failed."`
}

// MemoryIngested is the data of a memory.ingested event.
type MemoryIngested struct {
	JobID   string `json:"job_id" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The job that stored the items."`
	Project string `json:"project" example:"garden" doc:"The project that has them."`
	Items   int    `json:"items" example:"1" doc:"How many items were stored."`
}

// The job events, on GET /api/v1/events and on each job's log.
var (
	jobQueued      = streams.EventType{Name: EventJobQueued, Data: JobQueued{}, Doc: "A batch you sent was accepted: its job is queued."}
	jobProgress    = streams.EventType{Name: EventJobProgress, Data: JobProgress{}, Doc: "A job stored more of its items. On a job's log opened without Last-Event-ID, the first event gives its state when the stream started, with an id to resume from like any other."}
	jobSucceeded   = streams.EventType{Name: EventJobSucceeded, Data: JobSucceeded{}, Doc: "A job stored all of its items. On a job's log, the last event."}
	jobFailed      = streams.EventType{Name: EventJobFailed, Data: JobFailed{}, Doc: "A job ended without storing all of its items. On a job's log, the last event."}
	memoryIngested = streams.EventType{Name: EventMemoryIngested, Data: MemoryIngested{}, Doc: "A project has new items to find."}
)

var events = []streams.EventType{jobQueued, jobProgress, jobSucceeded, jobFailed, memoryIngested}

// Publisher returns the Config.Publish that publishes a user's ingest
// events to hub; an undeclared event is logged and dropped.
func Publisher(hub streams.Hub) func(ctx context.Context, userID, eventType string, data any) {
	return streams.Publisher(hub, events...)
}
