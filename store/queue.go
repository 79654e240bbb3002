package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
)

// This file is brain's job queue: River (github.com/riverqueue/river), in
// the same database as everything else, so that a job is enqueued in the
// transaction that creates what it will work on, and exists if and only if
// that transaction commits. The queue knows no job kind: a feature
// registers its own JobArgs and worker ([AddWorker]) and enqueues in its
// own transactions ([Queue.EnqueueTx]).
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

// ErrPermanent marks an error of a job that can never succeed, however
// often it is tried: a work function returns an error wrapping it
// (fmt.Errorf("job %s: %w: no such record", id, ErrPermanent)) and the job
// ends at once, in River's "cancelled" state, with that error's message,
// instead of being retried. It is fault.ErrPermanent.
var ErrPermanent = fault.ErrPermanent

// ErrYield marks an error of a job that is no failure: the work function
// hands the job back unfinished, to give its worker to a more urgent job
// (a feature's own test, such as the memory example's yield). The job is
// available again at once, behind the jobs of its priority waiting now,
// and the attempt does not count.
var ErrYield = errors.New("the job yields its worker")

// The defaults of a queue's attempt and of a worker.
const (
	DefaultJobTimeout = 30 * time.Second
	DefaultWorkers    = 4
)

// QueueOptions configure a [Queue]. The zero value is the default of each.
type QueueOptions struct {
	// MaxAttempts is how many times a job is tried before River gives up on
	// it (its state becomes "discarded"); 10 when zero. Between attempts,
	// River waits attempt⁴ seconds (1 s, 16 s, 81 s, 4 min...), so ten
	// attempts span about four hours.
	MaxAttempts int

	// JobTimeout bounds one attempt: work's context ends then, and the
	// attempt counts as failed. DefaultJobTimeout when zero.
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

// Queue is brain's job queue on a [DB]: it enqueues the features' jobs in
// their transactions ([Queue.EnqueueTx]) and, once started, works each
// with the worker its kind's feature added ([AddWorker]). Every replica
// runs one; they share the jobs.
//
// A job is worked at least once: a replica that dies while working one
// leaves it to be rescued (see QueueOptions.RescueAfter), and an attempt
// may have done part of its work before it failed. So work must be
// idempotent.
type Queue struct {
	db   *DB
	opts QueueOptions

	mu      sync.Mutex
	workers *river.Workers
	queues  map[string]river.QueueConfig
	client  *river.Client[*sql.Tx] // built on first use; no worker is added after
}

// NewQueue returns a Queue on db with no workers: add each job kind's
// with [AddWorker] before the Queue's first use (EnqueueTx or Start).
func NewQueue(db *DB, opts QueueOptions) (*Queue, error) {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 10
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = DefaultJobTimeout
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
	return &Queue{db: db, opts: opts, workers: river.NewWorkers(), queues: map[string]river.QueueConfig{}}, nil
}

// A Worker works the jobs of one kind, T (River's JobArgs: its Kind names
// the kind, and its InsertOpts, if it has them, the queue and priority of
// each job).
type Worker[T river.JobArgs] struct {
	// Queue is the River queue the kind's jobs are in, which T's
	// InsertOpts must name too: a queue of its own gives the kind
	// workers of its own. river.QueueDefault when empty.
	Queue string
	// Workers is how many jobs of Queue one Queue works at once;
	// DefaultWorkers when zero. Replicas add up: two replicas work up to
	// twice as many.
	Workers int
	// Work works one job, with a context that ends after
	// QueueOptions.JobTimeout or when Stop gives up waiting. Its error
	// decides what happens next: nil completes the job; an error
	// wrapping [ErrPermanent] ends it at once; one wrapping [ErrYield]
	// makes it available again at once, without counting the attempt;
	// any other error (or a panic) is retried after River's back-off, up
	// to QueueOptions.MaxAttempts.
	Work func(ctx context.Context, job *river.Job[T]) error
	// GiveUp, when set, is told of a job whose last attempt failed: River
	// will not try it again, so whatever tracks the job must learn that
	// it has failed.
	GiveUp func(ctx context.Context, job *river.Job[T], err error)
}

// AddWorker adds w, the worker of job kind T, to q. Call it before q's
// first use; a kind added twice, or after, is an error.
func AddWorker[T river.JobArgs](q *Queue, w Worker[T]) error {
	if w.Work == nil {
		return errors.New("store: AddWorker: Work is nil: pass the function that works a job")
	}
	if w.Queue == "" {
		w.Queue = river.QueueDefault
	}
	if w.Workers <= 0 {
		w.Workers = DefaultWorkers
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.client != nil {
		return errors.New("store: AddWorker: the queue is in use: add every worker before the first EnqueueTx or Start")
	}
	if err := river.AddWorkerSafely(q.workers, river.WorkFunc(w.work(q.opts.Logger))); err != nil {
		return fmt.Errorf("store: AddWorker: %w", err)
	}
	c := q.queues[w.Queue]
	c.MaxWorkers += w.Workers
	q.queues[w.Queue] = c
	return nil
}

// work is w.Work as River runs it: a panic is an error of the attempt
// (a bug in Work, which River retries), and the attempt's error is told
// to River as settle says.
func (w Worker[T]) work(logger *slog.Logger) func(ctx context.Context, job *river.Job[T]) error {
	return func(ctx context.Context, job *river.Job[T]) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("store: job %d (%s) panicked: %v", job.ID, job.Kind, r)
				logger.Error("queue: a job panicked", "job", job.ID, "kind", job.Kind, "panic", r)
			}
			err = w.settle(ctx, job, err)
		}()
		return w.Work(ctx, job)
	}
}

// settle is what River is told of an attempt of job that ended with err:
// ErrPermanent cancels the job, ErrYield snoozes it without counting the
// attempt, and any other error is retried. When the last attempt failed,
// on its own or by its timeout (not by Stop, which hands the job back),
// River will not try it again, so GiveUp is told.
func (w Worker[T]) settle(ctx context.Context, job *river.Job[T], err error) error {
	stopped := ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
	permanent, yielded := errors.Is(err, ErrPermanent), errors.Is(err, ErrYield)
	if err != nil && !permanent && !yielded && !stopped && job.Attempt >= job.MaxAttempts && w.GiveUp != nil {
		w.GiveUp(context.WithoutCancel(ctx), job, err)
	}
	switch {
	case permanent:
		return river.JobCancel(err)
	case yielded:
		return river.JobSnooze(0)
	}
	return err
}

// riverClient is q's River client, built on first use with the workers
// added so far.
func (q *Queue) riverClient() (*river.Client[*sql.Tx], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.client != nil {
		return q.client, nil
	}
	cfg := &river.Config{
		MaxAttempts:          q.opts.MaxAttempts,
		JobTimeout:           q.opts.JobTimeout,
		RescueStuckJobsAfter: q.opts.RescueAfter,
		FetchPollInterval:    q.opts.PollInterval,
		// River fetches up to the free workers' worth of jobs at most once
		// per cooldown (its default 100 ms): 4 workers and 100 ms would
		// cap a replica at 40 jobs a second whatever the machine has.
		FetchCooldown: min(fetchCooldown, q.opts.PollInterval),
		Logger:        slog.New(quietOutages(q.opts.Logger.Handler(), time.Minute, time.Now)),
		TestOnly:      q.opts.testOnly,
	}
	if len(q.queues) > 0 { // else a client that only inserts
		cfg.Workers, cfg.Queues = q.workers, q.queues
	}
	client, err := river.NewClient(q.db.riverDriver(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store: the job queue: %w", err)
	}
	q.client = client
	return client, nil
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

// EnqueueTx adds a job of args' kind in tx: it exists, and will be
// worked, if and only if tx commits. opts, when not nil, override args'
// InsertOpts (a priority, say). The insert has tx's deadline.
func (q *Queue) EnqueueTx(ctx context.Context, tx *Tx, args river.JobArgs, opts *river.InsertOpts) error {
	client, err := q.riverClient()
	if err != nil {
		return err
	}
	ctx, cancel := tx.bound(ctx)
	defer cancel()
	if _, err := client.InsertTx(ctx, tx.sqlTx(), args, opts); err != nil {
		return fmt.Errorf("store: enqueue a job of kind %s: %w", args.Kind(), err)
	}
	return nil
}

// Start starts working jobs, in the background, until Stop. ctx's values
// reach work's context, but its end does not stop the Queue: only Stop
// does, so that a shutdown lets running jobs finish.
func (q *Queue) Start(ctx context.Context) error {
	client, err := q.riverClient()
	if err != nil {
		return err
	}
	if len(q.queues) == 0 { // no worker: nothing to work (q.queues is fixed once the client is built)
		return nil
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
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
	q.mu.Lock()
	started := q.client != nil && len(q.queues) > 0
	q.mu.Unlock()
	if !started {
		return nil
	}
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
