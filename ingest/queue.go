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
// One user's flood of large batches must not hold another user's small
// one back for more than a moment. River has no notion of users: it
// fetches the available jobs of a queue by priority (1, the most urgent,
// to 4), then by scheduled time, then by id, whenever a worker is free.
// Two things make that fair enough:
//
//   - Priority by backlog. [jobQueue.enqueueTx] gives a job a priority from
//     how many jobs its user had that were not final yet (the backlog,
//     which Accept reads from the user's usage row in the same
//     transaction): none gives 1, 1 to 3 give 2, 4 to 15 give 3, more
//     give 4 (see [Priority]). So the batch of a user who sends one now
//     and then is fetched before the backlog of a user who sent sixty,
//     whose own jobs keep their order. A priority is fixed when the job
//     is enqueued.
//   - Yielding. A job of 1000 large items takes seconds, and a worker
//     busy with it is free for no one. So between two chunks of its
//     items a job asks [jobQueue.yield] whether another user's more urgent
//     job (a smaller priority number; among light users, one as urgent
//     that has not started) is available; if one is, the work returns an
//     error wrapping [store.ErrYield] and the Queue snoozes the job (River's
//     JobSnooze(0), which does not count as an attempt): it is available
//     again at once, scheduled now, behind the jobs of its priority that
//     waited, and its next run goes on where this one stopped. The
//     urgent job gets the worker within a chunk's time: River fetches as
//     soon as a worker frees when the last fetch found more jobs than
//     free workers, whatever PollInterval. A job that nobody waits behind
//     never yields, so a lone flood costs nothing more; each yield costs
//     its job a second read of its batch.
//
// A job waits as long as more urgent ones keep the workers busy: a heavy
// user's jobs wait for the light users', which is the point, and two
// heavy users' jobs of one priority go in the order they were sent. With
// one user's 60 batches of 1000 items of 8 KiB queued, another user's
// batch of one item is done in 1.5–2 s on SQLite (each of its writes
// waits for a chunk of the flood's) and 0.05–0.25 s on PostgreSQL, where
// it waited 31–151 s in one FIFO queue (BENCHMARKS.md, Fair jobs). An
// idle store.Queue finds a new job by its notification on SQLite, and by its
// poll on PostgreSQL (PollInterval).

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
// its worker back: another user's ingest job is available, waiting for a
// worker, and is more urgent (a smaller priority number), or, among light
// users (priority 1 or 2), as urgent and not started yet. (Not the same
// user's: as a user's jobs end, their backlog shrinks and their newer jobs
// may be more urgent than their older ones, which must not take turns.
// Ties yield only to a job not started, so two light users' jobs never
// take turns either; and not among heavy users, whose large jobs would
// take turns at every chunk.) It is one read, of at most two probes of
// River's table by its fetching index (state, queue, priority), each job
// found joined to the jobs table by its id: the jobs of a smaller
// priority number, then, for a light user, those of the same one. Neither
// probe reads the job's own priority level whole, where a heavy user's
// backlog waits, so it costs the same however long that backlog is. With
// a ctx that is not work's, or when the read fails, it reports false: the
// job keeps its worker.
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
