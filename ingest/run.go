// This file runs the memory example beside the server: its service, the
// job queue's workers that process the batches it accepts, and the hourly
// sweep.
package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// start builds the ingest service on db, publishing on hub, and starts its
// job queue and an hourly sweep of expired keys and lost jobs. stop ends
// both, letting running jobs finish for up to 10 s.
func start(bg context.Context, db *store.DB, cfg moduleSettings, hub streams.Hub, logger *slog.Logger) (svc *Service, stop func(), err error) {
	queue, err := store.NewQueue(db, store.QueueOptions{JobTimeout: cfg.JobTimeout, Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("the job queue: %w", err)
	}
	jobs := &jobQueue{db: db, q: queue}
	svc = NewService(NewSQLStore(db, jobs.enqueueTx), Config{TTL: cfg.TTL, Publish: Publisher(hub), MaxItems: cfg.MaxItems,
		MaxQueuedJobs: cfg.MaxQueuedJobs, Rates: cfg.Rates, Yield: jobs.yield})
	// svc.Process's ErrYield and ErrPermanent are the queue's own.
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

// giveUpJob is what the queue does with a job it gives up on after
// repeated failures: svc marks it failed.
func giveUpJob(svc *Service, logger *slog.Logger) func(ctx context.Context, jobID string, err error) {
	return func(ctx context.Context, jobID string, err error) {
		if ferr := svc.Fail(ctx, jobID, "gave up after repeated failures: "+err.Error()); ferr != nil {
			logger.Warn("ingest: a job that failed for good could not be marked failed", "job", jobID, "error", ferr)
		}
	}
}

// sweepHourly sweeps now and every hour until ctx ends: the expired
// idempotency keys, and the jobs the queue lost.
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

// sweep sweeps once, logging what it did.
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
