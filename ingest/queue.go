// This file is the memory example's kind of job on the platform's queue
// (store.Queue): its arguments, its worker, its priorities and its yield,
// whose SQL reads River's table beside the jobs table.
package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/brain-template/brain/store"
	"github.com/riverqueue/river"
)

// Fair between users
//
// River fetches a queue's available jobs by priority (1 to 4), then by
// time. enqueueTx gives a job a priority from its user's backlog (see
// [Priority]), so a user who sends a batch now and then is served before
// another's flood. And between two chunks a job asks yield whether another
// user's more urgent job waits; if one does, it returns store.ErrYield and
// is snoozed, to resume where it stopped, so the urgent job gets a worker
// within a chunk's time (BENCHMARKS.md, Fair jobs).

// queueName is the River queue, and jobKind the job kind, of ingest jobs.
const (
	queueName = "ingest"
	jobKind   = "ingest"
)

// jobArgs are an ingest job's arguments: the id the service gave the job.
type jobArgs struct {
	JobID string `json:"job_id"`
}

// Kind names the job kind to River.
func (jobArgs) Kind() string { return jobKind }

// InsertOpts puts ingest jobs in their own queue, so their workers are
// theirs alone.
func (jobArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queueName} }

// Priority is the River priority of a job whose user had backlog jobs
// not final when it was enqueued: 1 (fetched first) for none, then 2, 3
// and 4 as the backlog passes 1, 4 and 16 (see "Fair between users").
func Priority(backlog int) int {
	switch {
	case backlog <= 0:
		return 1
	case backlog < 4:
		return 2
	case backlog < 16:
		return 3
	}
	return 4
}

// jobQueue is the ingest jobs on a store.Queue.
type jobQueue struct {
	db *store.DB
	q  *store.Queue
}

// addWorker adds the ingest jobs' worker to j's queue: work is called
// with each job's id, workers at once; giveUp, when set, is told of a job
// River will not try again.
func (j *jobQueue) addWorker(workers int, work func(ctx context.Context, jobID string) error, giveUp func(ctx context.Context, jobID string, err error)) error {
	w := store.Worker[jobArgs]{Queue: queueName, Workers: workers,
		Work: func(ctx context.Context, job *river.Job[jobArgs]) error {
			return work(context.WithValue(ctx, runningKey{}, running{job.Args.JobID, job.Priority}), job.Args.JobID)
		}}
	if giveUp != nil {
		w.GiveUp = func(ctx context.Context, job *river.Job[jobArgs], err error) { giveUp(ctx, job.Args.JobID, err) }
	}
	return store.AddWorker(j.q, w)
}

// enqueueTx adds an ingest job for jobID in tx: it exists, and will be
// worked, if and only if tx commits. backlog is how many jobs of the same
// user were not final before this one: it sets the job's priority (see
// [Priority]).
func (j *jobQueue) enqueueTx(ctx context.Context, tx *store.Tx, jobID string, backlog int) error {
	if jobID == "" {
		return errors.New("ingest: enqueue: the job id is empty: pass the id the service gave the job")
	}
	return j.q.EnqueueTx(ctx, tx, jobArgs{JobID: jobID}, &river.InsertOpts{Priority: Priority(backlog)}) // the queue is jobArgs'
}

// runningKey is the context key of the job that work is running, a
// running.
type runningKey struct{}

// running is a job as yield needs it: the service's id and River's
// priority.
type running struct {
	jobID    string
	priority int
}

// yield reports whether the job that work is running with ctx should give
// its worker back: another user's job is available and more urgent (a
// smaller priority number) or, among light users (priority 1 or 2), as
// urgent and not started yet, so that jobs never take turns at every
// chunk. It is one read of at most two probes of River's fetching index,
// whose cost does not grow with a backlog. It reports false when ctx is
// not work's or the read fails.
func (j *jobQueue) yield(ctx context.Context) bool {
	r, ok := ctx.Value(runningKey{}).(running)
	if !ok {
		return false
	}
	jobID := "r.args->>'job_id'"
	if j.db.Dialect == store.SQLite {
		jobID = "json_extract(r.args, '$.job_id')"
	}
	waiting := `EXISTS (SELECT 1 FROM river_job r JOIN jobs j ON j.id = ` + jobID + `
		WHERE r.state = 'available' AND r.queue = $1 AND %s AND j.user_id <> (SELECT user_id FROM jobs WHERE id = $3))`
	var urgent bool
	err := j.db.QueryRowContext(ctx, `SELECT `+fmt.Sprintf(waiting, "r.priority < $2")+
		` OR ($2 <= 2 AND `+fmt.Sprintf(waiting, "r.priority = $2 AND j.status = 'queued'")+`)`,
		queueName, r.priority, r.jobID).Scan(&urgent)
	return err == nil && urgent
}
