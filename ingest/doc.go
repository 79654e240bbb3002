// Package ingest accepts batches of notes exactly once: idempotency keys, jobs and their progress.
package ingest
