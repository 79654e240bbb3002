// Package ingest accepts batches of notes exactly once: idempotency keys, jobs and their progress.
//
// [Service.Ingest] checks a batch, derives its idempotency key ([Key]) and,
// in one transaction of the [Store], records the key and creates and
// enqueues a job holding the batch; the same batch again within the key's
// time to live replays that job. A queue worker runs [Service.Process],
// which stores the items for [Service.Query] to find, publishing the job's
// progress. Everything belongs to one user, and no user sees another's.
package ingest
