package ingest

import (
	"context"
	"fmt"

	"github.com/brain-template/brain/store"
	"github.com/riverqueue/river"
)

// Fair between users: a job's River priority comes from its user's backlog
// ([Priority]), and between chunks a job yields to another user's more
// urgent one (BENCHMARKS.md, Fair jobs).
const (
	queueName = "ingest"
	jobKind   = "ingest"
)

type jobArgs struct {
	JobID string `json:"job_id"`
}

// Kind names the job kind to River.
func (jobArgs) Kind() string { return jobKind }

// InsertOpts puts ingest jobs in their own queue.
func (jobArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queueName} }

// Priority is the River priority of a job whose user had backlog jobs not
// final: 1 (fetched first) for none, then 2, 3 and 4 from 1, 4 and 16.
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

type jobQueue struct {
	db *store.DB
	q  *store.Queue
}

// addWorker adds the ingest jobs' worker; giveUp, when set, is told of a
// job River will not try again.
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

// enqueueTx adds an ingest job for jobID in tx, at the [Priority] of backlog.
func (j *jobQueue) enqueueTx(ctx context.Context, tx *store.Tx, jobID string, backlog int) error {
	return j.q.EnqueueTx(ctx, tx, jobArgs{JobID: jobID}, &river.InsertOpts{Priority: Priority(backlog)})
}

// runningKey is the context key of the running job, as yield needs it.
type runningKey struct{}

type running struct {
	jobID    string
	priority int
}

// yield reports whether the job running with ctx should give its worker
// back: another user's job is more urgent or, among light users (priority
// 1 or 2), as urgent and not started. It is one read of River's index.
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
