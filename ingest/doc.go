// Package ingest accepts batches of notes exactly once: idempotency keys, jobs and their progress.
//
// A client posts a batch of items for one project. [Service.Ingest] checks
// it, derives its idempotency key ([Key]) and, in one transaction of the
// [Store], records the key, creates a job holding the batch and enqueues
// the job: when Ingest returns, the batch is durably stored and will be
// processed. The same batch sent again within the key's time to live finds
// its key and gets the same job back, replayed, with nothing enqueued; a
// different batch under the same key is refused ([ErrKeyReused]).
//
// A worker of the queue runs [Service.Process] on the job: it stores the
// batch's items, which the full-text index then finds ([Service.Query]),
// and moves the job from queued through running to succeeded or failed,
// publishing its progress as events. Processing a job again stores
// nothing twice.
//
// Every item, job and key belongs to one user, and no call of one user
// sees another's.
package ingest
