package ingest

// The events the [Service] publishes, each to the job's user, through
// Config.Publish. Their data types follow; they are JSON as they are.
const (
	// EventJobQueued: a batch was accepted (not on a replay). Data: JobQueued.
	EventJobQueued = "job.queued"
	// EventJobProgress: a job stored more of its items. Data: JobProgress.
	EventJobProgress = "job.progress"
	// EventJobSucceeded: a job stored all of its items. Data: JobSucceeded.
	EventJobSucceeded = "job.succeeded"
	// EventJobFailed: a job ended without storing all of its items.
	// Data: JobFailed.
	EventJobFailed = "job.failed"
	// EventMemoryIngested: a project has new items to find, after
	// job.succeeded. Data: MemoryIngested.
	EventMemoryIngested = "memory.ingested"
)

// JobQueued is the data of a job.queued event.
type JobQueued struct {
	JobID      string `json:"job_id" doc:"The new job."`
	IngestID   string `json:"ingest_id" doc:"The batch's idempotency key."`
	Project    string `json:"project" doc:"The project the items go to."`
	ItemsTotal int    `json:"items_total" doc:"How many items the batch has."`
}

// JobProgress is the data of a job.progress event.
type JobProgress struct {
	JobID      string `json:"job_id" doc:"The job."`
	ItemsDone  int    `json:"items_done" doc:"How many of its items are stored."`
	ItemsTotal int    `json:"items_total" doc:"How many items the batch has."`
}

// JobSucceeded is the data of a job.succeeded event.
type JobSucceeded struct {
	JobID      string `json:"job_id" doc:"The job."`
	ItemsTotal int    `json:"items_total" doc:"How many items it stored."`
}

// JobFailed is the data of a job.failed event.
type JobFailed struct {
	JobID     string `json:"job_id" doc:"The job."`
	ItemsDone int    `json:"items_done" doc:"How many of its items were stored and stay."`
	Error     string `json:"error" doc:"Why it failed."`
}

// MemoryIngested is the data of a memory.ingested event.
type MemoryIngested struct {
	JobID   string `json:"job_id" doc:"The job that stored the items."`
	Project string `json:"project" doc:"The project that has them."`
	Items   int    `json:"items" doc:"How many items were stored."`
}
