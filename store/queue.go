package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
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
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ErrPermanent marks a job's error that retrying cannot fix: the job ends.
var ErrPermanent = fault.ErrPermanent

// ErrYield hands a job back unfinished, available at once; the attempt
// does not count.
var ErrYield = errors.New("the job yields its worker")

// The defaults of a queue's attempt and of a worker.
const (
	DefaultJobTimeout = 30 * time.Second
	DefaultWorkers    = 4
)

// QueueOptions configure a [Queue]. The zero value is the default of each.
type QueueOptions struct {
	MaxAttempts  int           // tries before River gives up; 10
	JobTimeout   time.Duration // of one attempt; DefaultJobTimeout
	RescueAfter  time.Duration // before a "running" job is retried; JobTimeout + 10 s
	PollInterval time.Duration // how often to look for new jobs; 1 s
	Logger       *slog.Logger  // River's logs, its errors at WARN once a minute

	testOnly bool // no random delay before River's maintenance tasks
}

// Queue is the job queue (River) on a [DB]: a job enqueued in a
// transaction exists if it commits, and is worked at least once.
type Queue struct {
	db   *DB
	opts QueueOptions

	mu      sync.Mutex
	workers *river.Workers
	queues  map[string]river.QueueConfig
	client  *river.Client[*sql.Tx] // built on first use
}

// NewQueue returns a Queue on db; add workers with [AddWorker] before use.
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
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	return &Queue{db: db, opts: opts, workers: river.NewWorkers(), queues: map[string]river.QueueConfig{}}, nil
}

// A Worker works the jobs of one kind, T.
type Worker[T river.JobArgs] struct {
	Queue   string // the River queue, as T's InsertOpts name it
	Workers int    // jobs worked at once per replica; DefaultWorkers
	// Work works one job; an error (or panic) is retried unless it wraps
	// [ErrPermanent] or [ErrYield].
	Work   func(ctx context.Context, job *river.Job[T]) error
	GiveUp func(ctx context.Context, job *river.Job[T], err error) // told of a last failed attempt
}

// AddWorker adds w, the worker of job kind T, to q before its first use.
func AddWorker[T river.JobArgs](q *Queue, w Worker[T]) error {
	if w.Work == nil {
		return errors.New("store: AddWorker: Work is nil: pass the function that works a job")
	}
	w.Queue = cmp.Or(w.Queue, river.QueueDefault)
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

// work is w.Work as River runs it: a panic fails the attempt, and GiveUp
// hears of a last failed attempt unless Stop cut it off.
func (w Worker[T]) work(logger *slog.Logger) func(ctx context.Context, job *river.Job[T]) error {
	return func(ctx context.Context, job *river.Job[T]) (err error) {
		ctx, span := jobSpan(ctx, job.JobRow)
		defer span.End()
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("store: job %d (%s) panicked: %v", job.ID, job.Kind, r)
				logger.ErrorContext(ctx, "queue: a job panicked", "job", job.ID, "kind", job.Kind, "panic", r)
			}
			stopped := ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
			permanent, yielded := errors.Is(err, ErrPermanent), errors.Is(err, ErrYield)
			if err != nil && !yielded {
				span.SetStatus(codes.Error, err.Error())
			}
			if err != nil && !permanent && !yielded && !stopped && job.Attempt >= job.MaxAttempts && w.GiveUp != nil {
				w.GiveUp(context.WithoutCancel(ctx), job, err)
			}
			switch {
			case permanent:
				err = river.JobCancel(err)
			case yielded:
				err = river.JobSnooze(0)
			}
		}()
		return w.Work(ctx, job)
	}
}

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
		FetchCooldown:        min(fetchCooldown, q.opts.PollInterval),
		Logger:               slog.New(quietOutages(q.opts.Logger.Handler(), time.Minute, time.Now)),
		TestOnly:             q.opts.testOnly,
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

const fetchCooldown = 20 * time.Millisecond // River's 100 ms caps 4 workers at 40 jobs/s

func (db *DB) riverDriver() riverdriver.Driver[*sql.Tx] {
	if db.Dialect == SQLite {
		return riversqlite.New(db.sql)
	}
	return riverdatabasesql.New(db.sql)
}

// EnqueueTx adds a job in tx; opts, when not nil, override args' InsertOpts.
func (q *Queue) EnqueueTx(ctx context.Context, tx *Tx, args river.JobArgs, opts *river.InsertOpts) error {
	client, err := q.riverClient()
	if err != nil {
		return err
	}
	ctx, cancel := tx.bound(ctx)
	defer cancel()
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() && (opts == nil || opts.Metadata == nil) {
		var span trace.Span // the job carries the trace on, in its metadata (jobSpan)
		ctx, span = parent.TracerProvider().Tracer("store").Start(ctx, "enqueue "+args.Kind(), trace.WithSpanKind(trace.SpanKindProducer))
		defer span.End()
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		o := river.InsertOpts{}
		if opts != nil {
			o = *opts
		}
		o.Metadata, _ = json.Marshal(carrier)
		opts = &o
	}
	if _, err := client.InsertTx(ctx, tx.tx, args, opts); err != nil {
		return fmt.Errorf("store: enqueue a job of kind %s: %w", args.Kind(), err)
	}
	return nil
}

// jobSpan continues the trace of the request that enqueued job, if it was
// traced (EnqueueTx): a span for the job's wait in the queue, then the one
// returned, which it is worked in. Else it returns ctx and a span that
// records nothing.
func jobSpan(ctx context.Context, job *rivertype.JobRow) (context.Context, trace.Span) {
	var meta struct{ Traceparent string }
	_ = json.Unmarshal(job.Metadata, &meta) // none: a job enqueued outside a trace
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": meta.Traceparent}))
	if !sc.IsValid() {
		return ctx, noSpan
	}
	ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	tracer := otel.Tracer("store")
	_, wait := tracer.Start(ctx, "queue wait", trace.WithTimestamp(job.CreatedAt))
	wait.End()
	return tracer.Start(ctx, "job "+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(trace.Link{SpanContext: sc}),
		trace.WithAttributes(attribute.Int64("job.id", job.ID), attribute.Int("job.attempt", job.Attempt)))
}

// Start works jobs in the background until Stop; ctx's end does not stop it.
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

// Stop waits for the running jobs; if ctx ends first, it cancels them.
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
