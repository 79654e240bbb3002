package ingest

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// Module is the memory example as a binary runs it: its settings, its
// migration set, and Start. A binary makes one for each configuration.
type Module struct {
	settings moduleSettings
}

// NewModule returns the memory example with its settings at their defaults.
func NewModule() *Module { return &Module{} }

// Settings is the example's settings table, whose rows read into m.
func (m *Module) Settings() settings.Table { return settingsTable(&m.settings) }

// Migrations is [Migrations].
func (m *Module) Migrations() store.Migrations { return Migrations }

// Start runs the example's service, job workers and hourly sweep on db,
// and returns its operations and stop, to call before hub and db close.
// With db nil nothing runs: the operations only document the API.
func (m *Module) Start(ctx context.Context, db *store.DB, hub streams.Hub, logger *slog.Logger) (ops api.Feature, stop func(), err error) {
	if db == nil {
		s := m.settings
		return Feature(NewService(nil, Config{TTL: s.TTL, MaxItems: s.MaxItems, MaxQueuedJobs: s.MaxQueuedJobs, Rates: s.Rates})), func() {}, nil
	}
	svc, stop, err := start(ctx, db, m.settings, hub, logger)
	if err != nil {
		return nil, nil, err
	}
	return Feature(svc), stop, nil
}

// moduleSettings are the memory example's settings; zero fields take the defaults.
type moduleSettings struct {
	TTL           time.Duration // Config.TTL
	MaxItems      int           // Config.MaxItems
	MaxQueuedJobs int           // Config.MaxQueuedJobs
	Workers       int           // store.Worker.Workers
	JobTimeout    time.Duration // store.QueueOptions.JobTimeout
	Rates         Rates         // Config.Rates
}

const maxRate = 1_000_000

// settingsTable is the memory example's settings, read into s; another
// variable of the MEM_RATE_LIMIT family is a typo, which stops start-up.
func settingsTable(s *moduleSettings) settings.Table {
	return settings.Table{
		Rows: []settings.Setting{
			{Flag: "idempotency-ttl", Env: "MEM_IDEMPOTENCY_TTL_SECS", Default: strconv.Itoa(int(DefaultTTL / time.Second)),
				Usage: "seconds an ingest's idempotency key names its batch, from the first request", Set: ttlSeconds(&s.TTL)},
			{Flag: "max-items", Env: product.EnvPrefix + "MAX_ITEMS", Default: strconv.Itoa(DefaultMaxItems),
				Usage: "memory items per user, stored or in jobs not finished; an ingest past it answers 409", Set: settings.Int(1, 100_000_000, &s.MaxItems)},
			{Flag: "max-queued-jobs", Env: product.EnvPrefix + "MAX_QUEUED_JOBS", Default: strconv.Itoa(DefaultMaxQueuedJobs),
				Usage: "ingest jobs per user that are queued or running; an ingest past it answers 409", Set: settings.Int(1, 1_000_000, &s.MaxQueuedJobs)},
			{Flag: "job-workers", Env: product.EnvPrefix + "JOB_WORKERS", Default: strconv.Itoa(store.DefaultWorkers),
				Usage: "ingest jobs this replica works at once (at most 16: each holds a database connection while it works)", Set: settings.Int(1, 16, &s.Workers)},
			{Flag: "job-timeout", Env: product.EnvPrefix + "JOB_TIMEOUT", Default: settings.FormatDuration(store.DefaultJobTimeout),
				Usage: "how long one attempt of an ingest job may run, 1s to 1h; a job a crash cut off is worked again 10 to 50 s after this much time from its start", Set: jobTimeout(&s.JobTimeout)},
			{Flag: "rate-limit-ingest", Env: "MEM_RATE_LIMIT_INGEST", Default: strconv.Itoa(DefaultRates.IngestPerHour),
				Usage: "ingests an API key may send an hour: the hourly limit of the ingest budget", Set: settings.Int(1, maxRate, &s.Rates.IngestPerHour)},
			{Flag: "rate-limit-query", Env: "MEM_RATE_LIMIT_QUERY", Default: strconv.Itoa(DefaultRates.QueryPerHour),
				Usage: "queries an API key may send an hour: the hourly limit of the query budget", Set: settings.Int(1, maxRate, &s.Rates.QueryPerHour)},
			{Flag: "rate-limit-projects", Env: "MEM_RATE_LIMIT_PROJECTS", Default: strconv.Itoa(DefaultRates.ProjectsPerHour),
				Usage: "project lists an API key may ask for an hour: the hourly limit of the projects budget", Set: settings.Int(1, maxRate, &s.Rates.ProjectsPerHour)},
			{Flag: "rate-limit-burst", Env: "MEM_RATE_LIMIT_BURST", Default: strconv.Itoa(DefaultRates.PerSecond),
				Usage: "requests an API key may send a second to each of ingest, query, projects and skills: the per-second limit of their budgets", Set: settings.Int(1, maxRate, &s.Rates.PerSecond)},
		},
		Families: []string{"MEM_RATE_LIMIT", "MEM_RATELIMIT"},
	}
}

func ttlSeconds(dst *time.Duration) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 60 || n > 90*86400 {
			return errors.New("want a whole number of seconds from 60 to 7776000 (90 days)")
		}
		*dst = time.Duration(n) * time.Second
		return nil
	}
}

func jobTimeout(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Second || d > time.Hour {
			return errors.New("want a duration from 1s to 1h, such as 30s")
		}
		*dst = d
		return nil
	}
}

// start builds the ingest service on db and starts its job queue and
// hourly sweep; stop lets running jobs finish for up to 10 s.
func start(bg context.Context, db *store.DB, cfg moduleSettings, hub streams.Hub, logger *slog.Logger) (svc *Service, stop func(), err error) {
	queue, err := store.NewQueue(db, store.QueueOptions{JobTimeout: cfg.JobTimeout, Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("the job queue: %w", err)
	}
	jobs := &jobQueue{db: db, q: queue}
	svc = NewService(NewSQLStore(db, jobs.enqueueTx), Config{TTL: cfg.TTL, Publish: Publisher(hub), MaxItems: cfg.MaxItems,
		MaxQueuedJobs: cfg.MaxQueuedJobs, Rates: cfg.Rates, Yield: jobs.yield})
	if err := jobs.addWorker(cfg.Workers, svc.Process, giveUpJob(svc, logger)); err != nil {
		return nil, nil, fmt.Errorf("the job queue: %w", err)
	}
	if err := queue.Start(bg); err != nil {
		return nil, nil, fmt.Errorf("the job queue: %w", err)
	}
	sweepCtx, stopSweep := context.WithCancel(bg)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		sweepHourly(sweepCtx, svc, logger)
	}()
	return svc, func() {
		stopSweep()
		<-swept
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := queue.Stop(ctx); err != nil {
			logger.Warn("ingest: the job queue stopped with jobs unfinished; they will be worked again", "error", err)
		}
	}, nil
}

func giveUpJob(svc *Service, logger *slog.Logger) func(ctx context.Context, jobID string, err error) {
	return func(ctx context.Context, jobID string, err error) {
		if ferr := svc.Fail(ctx, jobID, "gave up after repeated failures: "+err.Error()); ferr != nil {
			logger.WarnContext(ctx, "ingest: a job that failed for good could not be marked failed", "job", jobID, "error", ferr)
		}
	}
}

// sweepHourly sweeps expired keys and lost jobs now and every hour.
func sweepHourly(ctx context.Context, svc *Service, logger *slog.Logger) {
	for t := time.NewTicker(time.Hour); ; {
		sweep(ctx, svc, logger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func sweep(ctx context.Context, svc *Service, logger *slog.Logger) {
	if n, err := svc.Sweep(ctx); err != nil && ctx.Err() == nil {
		logger.Warn("ingest: sweeping expired idempotency keys failed; retrying in an hour", "error", err)
	} else if n > 0 {
		logger.Info("ingest: swept expired idempotency keys", "keys", n)
	}
	if n, err := svc.FailAbandoned(ctx); err != nil && ctx.Err() == nil {
		logger.Warn("ingest: failing abandoned jobs failed; retrying in an hour", "error", err)
	} else if n > 0 {
		logger.Warn("ingest: failed jobs the queue had lost, unfinished a day after they were accepted", "jobs", n)
	}
}

//go:embed migrations
var migrationFiles embed.FS

// Migrations is the example's migration set, "ingest", with the Go step
// of 0003_search, which indexes the items stored before it.
var Migrations = store.Migrations{
	Name: "ingest",
	FS:   store.SubFS(migrationFiles, "migrations"),
	Steps: map[string]func(ctx context.Context, tx *sql.Tx, d store.Dialect) error{
		"search": reindexItems,
	},
}
