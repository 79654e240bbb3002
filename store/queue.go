package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// This file is brain's job queue: River (github.com/riverqueue/river), in
// the same database as everything else, so that a job is enqueued in the
// transaction that creates what it will work on, and exists if and only if
// that transaction commits.
//
// River reaches the database through the *sql.DB under [DB], not through
// DB's deadlines: it bounds its own calls (its maintenance queries, its
// fetches, its completions each have a timeout of their own), and a fetch
// that waits for a lock is River's business, not a request's. Only
// [Queue.EnqueueTx], which runs in a brain transaction, has that
// transaction's deadline.
//
// Each dialect has its own River driver, both on database/sql:
//
//   - PostgreSQL: riverdatabasesql, on the same pool as the rest of brain.
//     It fetches, works and completes jobs like River's pgx driver, but
//     has no listener (River listens only through a pgx pool, which brain
//     does not open), so River runs in poll-only mode: a replica finds new
//     jobs every PollInterval, and leadership moves by polling too.
//   - SQLite: riversqlite, also on brain's pool. River's advice for SQLite
//     is a pool of one connection, so that its concurrent internal calls
//     never meet SQLITE_BUSY ("database is locked"). Brain's pool avoids
//     that error another way: a writer waits for the write lock
//     (busy_timeout), and every transaction takes it at BEGIN
//     (_txlock=immediate), so none fails upgrading from read to write.
//     River's calls wait their turn like brain's own writers; a second,
//     one-connection pool would only add a second line for the same lock.
//     Two Queues on one file (two processes) share it the same way.
//     SQLite has no LISTEN/NOTIFY: riversqlite writes its notifications
//     (a job inserted, a leader resigning) to a table, river_notification,
//     which every Queue reads every 50 ms (a fixed interval in River), so
//     a new job is usually picked up within about that. River skips the
//     notification of a job inserted within 100 ms of the one before; such
//     a job waits for the next poll (PollInterval, 1 s).

//
// # Fair between users
//
// One user's flood of large batches must not hold another user's small
// one back for more than a moment. River has no notion of users: it
// fetches the available jobs of a queue by priority (1, the most urgent,
// to 4), then by scheduled time, then by id, whenever a worker is free.
// Two things make that fair enough:
//
//   - Priority by backlog. [Queue.EnqueueTx] gives a job a priority from
//     how many jobs its user had that were not final yet (the backlog,
//     which Accept reads from the user's usage row in the same
//     transaction): none gives 1, 1 to 3 give 2, 4 to 15 give 3, more
//     give 4 (see [Priority]). So the batch of a user who sends one now
//     and then is fetched before the backlog of a user who sent sixty,
//     whose own jobs keep their order. A priority is fixed when the job
//     is enqueued.
//   - Yielding. A job of 1000 large items takes seconds, and a worker
//     busy with it is free for no one. So between two chunks of its
//     items a job asks [Queue.Yield] whether another user's more urgent
//     job (a smaller priority number; among light users, one as urgent
//     that has not started) is available; if one is, the work returns an
//     error wrapping [ErrYield] and the Queue snoozes the job (River's
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
// idle Queue finds a new job by its notification on SQLite, and by its
// poll on PostgreSQL (PollInterval).

// ErrPermanent marks an error of a job that can never succeed, however
// often it is tried: a work function returns an error wrapping it
// (fmt.Errorf("ingest %s: %w: no such job", id, ErrPermanent)) and the job
// ends at once, in River's "cancelled" state, with that error's message,
// instead of being retried.
var ErrPermanent = errors.New("permanent failure")

// ErrYield marks an error of a job that is no failure: the work function
// hands the job back unfinished, to give its worker to a more urgent job
// ([Queue.Yield]). The job is available again at once, behind the jobs of
// its priority waiting now, and the attempt does not count (see "Fair
// between users" above).
var ErrYield = errors.New("the job yields its worker")

// queueName is the River queue, and jobKind the job kind, of ingest jobs.
const (
	queueName = "ingest"
	jobKind   = "ingest"
)

// ingestArgs are an ingest job's arguments: the id brain gave the job.
type ingestArgs struct {
	JobID string `json:"job_id"`
}

// Kind names the job kind to River.
func (ingestArgs) Kind() string { return jobKind }

// InsertOpts puts ingest jobs in their own queue, so their workers are
// theirs alone.
func (ingestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queueName} }

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

// QueueOptions configure a [Queue]. The zero value is the default of each.
type QueueOptions struct {
	// Workers is how many jobs one Queue works at once; 4 when zero.
	// Replicas add up: two replicas work up to twice as many.
	Workers int

	// GiveUp, when set, is told of a job whose last attempt failed: River
	// will not try it again, so whatever tracks the job must learn that
	// it has failed.
	GiveUp func(ctx context.Context, jobID string, err error)
	// MaxAttempts is how many times a job is tried before River gives up on
	// it (its state becomes "discarded"); 10 when zero. Between attempts,
	// River waits attempt⁴ seconds (1 s, 16 s, 81 s, 4 min...), so ten
	// attempts span about four hours.
	MaxAttempts int

	// JobTimeout bounds one attempt: work's context ends then, and the
	// attempt counts as failed. 30 s when zero.
	JobTimeout time.Duration

	// RescueAfter is how long a job may stay "running" before River
	// decides its worker died (a crash, a kill, a lost machine) and tries
	// it again. It must be longer than JobTimeout, or a job still working
	// could be started a second time beside itself; when zero it is
	// JobTimeout + 10 s, the time River gives a job whose context has
	// ended to return.
	//
	// River's rescuer runs on the leader (one replica River elects; a
	// leader that died is replaced within about 15 s), as it starts
	// leading and then every 30 s (a fixed interval in River); it makes
	// a job that has been running for RescueAfter retryable, and River's
	// scheduler (every 5 s) makes it available again after the usual
	// back-off (1 s for a first attempt). With the defaults, a job cut off
	// by a crash is worked again about 40 s to 80 s after it started,
	// whether the crashed replica restarts or another one is running.
	RescueAfter time.Duration

	// PollInterval is how often a Queue looks for new jobs when nothing
	// told it of one: on PostgreSQL, how long a new job may wait; on
	// SQLite, a fallback (see above). 1 s when zero.
	PollInterval time.Duration

	// Logger receives River's logs; slog.Default() when nil. River's
	// warnings and errors (while the database is down, several a second)
	// come at WARN, each message once a minute, with how many times it
	// came since (repeats).
	Logger *slog.Logger

	// testOnly turns off River's random delay of up to a second before
	// each maintenance task starts (set by tests, see export_test.go).
	testOnly bool
}

// Queue is brain's job queue on a [DB]: it enqueues ingest jobs in brain's
// transactions and, once started, works them by calling its work function
// with each job's id. Every replica runs one; they share the jobs.
//
// A job is worked at least once: a replica that dies while working one
// leaves it to be rescued (see QueueOptions.RescueAfter), and an attempt
// may have done part of its work before it failed. So work must be
// idempotent.
type Queue struct {
	db     *DB
	client *river.Client[*sql.Tx]
}

// NewQueue returns a Queue on db whose jobs are worked by work, which is
// called with the job's id and a context that ends after
// QueueOptions.JobTimeout or when Stop gives up waiting. work's error
// decides what happens next: nil completes the job; an error wrapping
// [ErrPermanent] ends it at once; one wrapping [ErrYield] makes it
// available again at once, without counting the attempt; any other error
// (or a panic) is retried after River's back-off, up to MaxAttempts.
//
// The Queue does not work jobs until Start; it can enqueue before.
func NewQueue(db *DB, work func(ctx context.Context, jobID string) error, opts QueueOptions) (*Queue, error) {
	if work == nil {
		return nil, errors.New("store: NewQueue: work is nil: pass the function that works a job")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 10
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = 30 * time.Second
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = opts.JobTimeout + 10*time.Second
	}
	if opts.RescueAfter <= opts.JobTimeout {
		return nil, fmt.Errorf("store: NewQueue: RescueAfter (%s) must be longer than JobTimeout (%s), or a job still working could be started again beside itself", opts.RescueAfter, opts.JobTimeout)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[ingestArgs]) (err error) {
		defer func() {
			if r := recover(); r != nil { // a bug in work: an error of this attempt, which River retries
				err = fmt.Errorf("store: job %s panicked: %v", job.Args.JobID, r)
				opts.Logger.Error("queue: a job panicked", "job", job.Args.JobID, "panic", r)
			}
			// The last attempt failed, on its own or by its timeout (not
			// by Stop, which hands the job back): River will not try it
			// again, so whatever tracks it must learn it failed.
			stopped := ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
			yielded := errors.Is(err, ErrYield)
			if err != nil && !errors.Is(err, ErrPermanent) && !yielded && !stopped && job.Attempt >= job.MaxAttempts && opts.GiveUp != nil {
				opts.GiveUp(context.WithoutCancel(ctx), job.Args.JobID, err)
			}
			switch {
			case errors.Is(err, ErrPermanent):
				err = river.JobCancel(err)
			case yielded:
				err = river.JobSnooze(0)
			}
		}()
		return work(context.WithValue(ctx, runningKey{}, running{job.Args.JobID, job.Priority}), job.Args.JobID)
	}))
	client, err := river.NewClient(db.riverDriver(), &river.Config{
		Workers: workers,
		Queues: map[string]river.QueueConfig{
			queueName: {MaxWorkers: opts.Workers},
		},
		MaxAttempts:          opts.MaxAttempts,
		JobTimeout:           opts.JobTimeout,
		RescueStuckJobsAfter: opts.RescueAfter,
		FetchPollInterval:    opts.PollInterval,
		// River fetches up to the free workers' worth of jobs at most once
		// per cooldown (its default 100 ms): 4 workers and 100 ms would
		// cap a replica at 40 jobs a second whatever the machine has.
		FetchCooldown: min(fetchCooldown, opts.PollInterval),
		Logger:        slog.New(quietOutages(opts.Logger.Handler(), time.Minute, time.Now)),
		TestOnly:      opts.testOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("store: NewQueue: %w", err)
	}
	return &Queue{db: db, client: client}, nil
}

// runningKey is the context key of the job that work is running, a
// running.
type runningKey struct{}

// running is a job as Yield needs it: brain's id and River's priority.
type running struct {
	jobID    string
	priority int
}

// Yield reports whether the job that work is running with ctx should give
// its worker back: another user's ingest job is available, waiting for a
// worker, and is more urgent (a smaller priority number), or, among light
// users (priority 1 or 2), as urgent and not started yet. (Not the same
// user's: as a user's jobs end, their backlog shrinks and their newer jobs
// may be more urgent than their older ones, which must not take turns.
// Ties yield only to a job not started, so two light users' jobs never
// take turns either; and not among heavy users, whose large jobs would
// take turns at every chunk.) It is one read, of at most two probes of
// River's table by its fetching index (state, queue, priority), each job
// found joined to brain's by its id: the jobs of a smaller priority
// number, then, for a light user, those of the same one. Neither probe
// reads the job's own priority level whole, where a heavy user's backlog
// waits, so it costs the same however long that backlog is. With a ctx
// that is not work's, or when the read fails, it reports false: the job
// keeps its worker.
func (q *Queue) Yield(ctx context.Context) bool {
	r, ok := ctx.Value(runningKey{}).(running)
	if !ok {
		return false
	}
	jobID := "r.args->>'job_id'"
	if q.db.Dialect == SQLite {
		jobID = "json_extract(r.args, '$.job_id')"
	}
	waiting := `EXISTS (SELECT 1 FROM river_job r JOIN jobs j ON j.id = ` + jobID + `
		WHERE r.state = 'available' AND r.queue = $1 AND %s AND j.user_id <> (SELECT user_id FROM jobs WHERE id = $3))`
	var urgent bool
	err := q.db.QueryRowContext(ctx, `SELECT `+fmt.Sprintf(waiting, "r.priority < $2")+
		` OR ($2 <= 2 AND `+fmt.Sprintf(waiting, "r.priority = $2 AND j.status = 'queued'")+`)`,
		queueName, r.priority, r.jobID).Scan(&urgent)
	return err == nil && urgent
}

// fetchCooldown is the least time between two fetches of jobs.
const fetchCooldown = 20 * time.Millisecond

// riverDriver is River's driver for db's dialect, on db's pool.
func (db *DB) riverDriver() riverdriver.Driver[*sql.Tx] {
	if db.Dialect == SQLite {
		return riversqlite.New(db.sql)
	}
	return riverdatabasesql.New(db.sql)
}

// EnqueueTx adds an ingest job for jobID in tx: it exists, and will be
// worked, if and only if tx commits. jobID is the id brain gave the job
// (its UUID); work receives it. backlog is how many jobs of the same user
// were not final before this one: it sets the job's priority (see
// [Priority]). The insert has tx's deadline.
func (q *Queue) EnqueueTx(ctx context.Context, tx *Tx, jobID string, backlog int) error {
	if jobID == "" {
		return errors.New("store: enqueue: the job id is empty: pass the id brain gave the job")
	}
	ctx, cancel := tx.bound(ctx)
	defer cancel()
	opts := &river.InsertOpts{Priority: Priority(backlog)} // the queue is ingestArgs'
	if _, err := q.client.InsertTx(ctx, tx.sqlTx(), ingestArgs{JobID: jobID}, opts); err != nil {
		return fmt.Errorf("store: enqueue job %s: %w", jobID, err)
	}
	return nil
}

// Start starts working jobs, in the background, until Stop. ctx's values
// reach work's context, but its end does not stop the Queue: only Stop
// does, so that a shutdown lets running jobs finish.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("store: start the job queue: %w", err)
	}
	return nil
}

// stopGrace is how long Stop waits, after ctx has ended, for running jobs
// to return once their contexts are cancelled.
const stopGrace = 5 * time.Second

// Stop stops fetching jobs and waits for the running ones to finish. If
// ctx ends first, it cancels their contexts, waits up to a few seconds
// for them to return, and returns ctx's error, as [http.Server.Shutdown]
// does. A job whose work returns its context's error then (or an error
// wrapping it) is available again at once, to this replica or another,
// and the attempt does not count; a job whose work ignores its context is
// left running and rescued later (see QueueOptions.RescueAfter).
func (q *Queue) Stop(ctx context.Context) error {
	err := q.client.Stop(ctx)
	if err == nil || ctx.Err() == nil {
		return err
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
	defer cancel()
	if err := q.client.StopAndCancel(gctx); err != nil {
		return fmt.Errorf("store: stop the job queue: jobs still running %s after their contexts were cancelled: %w", stopGrace, err)
	}
	return ctx.Err()
}
