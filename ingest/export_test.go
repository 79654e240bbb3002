package ingest

import (
	"context"

	"github.com/brain-template/brain/store"
)

// IndexTerms are the index terms a search of userID's for s asks for.
func IndexTerms(userID string, s Search) []string { return indexQueryTerms(userID, s) }

// OneUserKey makes every user's key in the index the same until the test
// ends, as if all their keys collided. The test must not be parallel.
func OneUserKey(t interface{ Cleanup(func()) }) {
	saved := userKey
	userKey = func(string) string { return "samekeysamekey00" }
	t.Cleanup(func() { userKey = saved })
}

// JobCountQueries are the queries of QueuedJobs and JobCounts.
var JobCountQueries = []string{queuedJobsSQL, jobCountsSQL}

// JobQueue is the ingest jobs on a store.Queue.
type JobQueue = jobQueue

// NewJobQueue adds the ingest jobs' worker to q.
func NewJobQueue(db *store.DB, q *store.Queue, workers int, work func(context.Context, string) error, giveUp func(context.Context, string, error)) (*JobQueue, error) {
	j := &jobQueue{db: db, q: q}
	return j, j.addWorker(workers, work, giveUp)
}

// EnqueueTx enqueues jobID in tx behind backlog jobs of its user.
func (j *jobQueue) EnqueueTx(ctx context.Context, tx *store.Tx, jobID string, backlog int) error {
	return j.enqueueTx(ctx, tx, jobID, backlog)
}

// Yield is whether the job ctx runs should give its worker back.
func (j *jobQueue) Yield(ctx context.Context) bool { return j.yield(ctx) }
