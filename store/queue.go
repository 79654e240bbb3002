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

// The job queue is River in brain's own database, so a job exists if and
// only if the transaction that enqueues it commits. River uses the *sql.DB
// under [DB] and bounds its own calls; on PostgreSQL it polls for jobs
// (it listens only through a pgx pool).

// ErrPermanent marks an error of a job that can never succeed: a work
// function returns an error wrapping it and the job ends at once (River's
// "cancelled" state) instead of being retried. It is fault.ErrPermanent.
var ErrPermanent = fault.ErrPermanent

// ErrYield marks an error that is no failure: the work function hands
// the job back unfinished, to free its worker for a more urgent job. The
// job is available again at once and the attempt does not count.
var ErrYield = errors.New("the job yields its worker")

// The defaults of a queue's attempt and of a worker.
const (
	DefaultJobTimeout = 30 * time.Second
	DefaultWorkers    = 4
)

// QueueOptions configure a [Queue]. The zero value is the default of each.
type QueueOptions struct {
	// MaxAttempts is how many times a job is tried before River gives up
	// on it ("discarded"); 10 when zero. River waits attempt⁴ seconds
	// between attempts, so ten span about four hours.
	MaxAttempts int
	// JobTimeout bounds one attempt; DefaultJobTimeout when zero.
	JobTimeout time.Duration
	// RescueAfter is how long a job may stay "running" before River tries
	// it again; longer than JobTimeout, JobTimeout + 10 s when zero.
	RescueAfter time.Duration
	// PollInterval is how often a Queue looks for new jobs nothing told it
	// of; 1 s when zero.
	PollInterval time.Duration
	// Logger receives River's logs, its warnings and errors at WARN once a
	// minute per message (quietOutages); slog.Default() when nil.
	Logger *slog.Logger

	testOnly bool // no random delay before River's maintenance tasks (tests)
}

// Queue is brain's job queue on a [DB]: it enqueues the features' jobs in
// their transactions ([Queue.EnqueueTx]) and, once started, works each
// with its kind's worker ([AddWorker]). Every replica runs one. A job is
// worked at least once, so work must be idempotent.
type Queue struct {
	db   *DB
	opts QueueOptions

	mu      sync.Mutex
	workers *river.Workers
	queues  map[string]river.QueueConfig
	client  *river.Client[*sql.Tx] // built on first use; no worker is added after
}

// NewQueue returns a Queue on db; add each kind's worker with [AddWorker]
// before its first use.
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

// A Worker works the jobs of one kind, T.
type Worker[T river.JobArgs] struct {
	// Queue is the River queue of the kind's jobs, which T's InsertOpts
	// must name too; river.QueueDefault when empty.
	Queue string
	// Workers is how many jobs of Queue one Queue works at once (per
	// replica); DefaultWorkers when zero.
	Workers int
	// Work works one job. nil completes it; an error wrapping
	// [ErrPermanent] ends it; one wrapping [ErrYield] hands it back; any
	// other error (or a panic) is retried, up to QueueOptions.MaxAttempts.
	Work func(ctx context.Context, job *river.Job[T]) error
	// GiveUp, when set, is told of a job whose last attempt failed.
	GiveUp func(ctx context.Context, job *river.Job[T], err error)
}

// AddWorker adds w, the worker of job kind T, to q before its first use.
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

// work is w.Work as River runs it: a panic is an error of the attempt.
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

// settle is what River is told of an attempt that ended with err. GiveUp
// hears of a last attempt that failed, unless Stop cut it off.
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

// riverClient is q's River client, built on first use.
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
		// River's default of 100 ms would cap 4 workers at 40 jobs a second.
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

const fetchCooldown = 20 * time.Millisecond

func (db *DB) riverDriver() riverdriver.Driver[*sql.Tx] {
	if db.Dialect == SQLite {
		return riversqlite.New(db.sql)
	}
	return riverdatabasesql.New(db.sql)
}

// EnqueueTx adds a job of args' kind in tx: it exists if and only if tx
// commits. opts, when not nil, override args' InsertOpts.
func (q *Queue) EnqueueTx(ctx context.Context, tx *Tx, args river.JobArgs, opts *river.InsertOpts) error {
	client, err := q.riverClient()
	if err != nil {
		return err
	}
	ctx, cancel := tx.bound(ctx)
	defer cancel()
	if _, err := client.InsertTx(ctx, tx.tx, args, opts); err != nil {
		return fmt.Errorf("store: enqueue a job of kind %s: %w", args.Kind(), err)
	}
	return nil
}

// Start starts working jobs in the background until Stop. ctx's values
// reach work's context; its end does not stop the Queue.
func (q *Queue) Start(ctx context.Context) error {
	client, err := q.riverClient()
	if err != nil {
		return err
	}
	if len(q.queues) == 0 {
		return nil
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("store: start the job queue: %w", err)
	}
	return nil
}

const stopGrace = 5 * time.Second

// Stop stops fetching jobs and waits for the running ones; if ctx ends
// first, it cancels their contexts and waits up to stopGrace.
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
