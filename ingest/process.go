package ingest

import (
	"context"
	"errors"
	"fmt"
)

// A chunk of a batch, one transaction of StoreItems, is at most chunkItems
// items and, past its first, chunkBytes of text (BENCHMARKS.md, Fair jobs).
const (
	chunkItems = 100
	chunkBytes = 256 << 10
)

// Process is the queue's work on job id: it stores the job's items a
// chunk at a time, publishing its progress, resuming after the items done.
// It returns ErrYield when Config.Yield says so, ErrPermanent when the job
// was failed; any other error is worth retrying.
func (s *Service) Process(ctx context.Context, id string) error {
	job, items, err := s.startJob(ctx, id)
	if err != nil || job.Status.Final() {
		return err
	}
	for start := job.ItemsDone; start < len(items); {
		end := chunkEnd(items, start)
		finished, err := s.store.StoreItems(ctx, job.ID, chunk(job, items, start, end), end, s.stamp())
		if errors.Is(err, ErrNotFound) { // another run finished it
			return nil
		}
		if err != nil {
			return unavailable(err)
		}
		s.cfg.Publish(ctx, job.UserID, EventJobProgress, JobProgress{JobID: job.ID, ItemsDone: end, ItemsTotal: job.ItemsTotal})
		if finished {
			s.publishSucceeded(ctx, job)
			return nil
		}
		start = end
		if start < len(items) && s.cfg.Yield != nil && s.cfg.Yield(ctx) {
			return fmt.Errorf("%w: job %s has %d of %d items stored", ErrYield, job.ID, start, len(items))
		}
	}
	// Every item was stored by a run that ended before the job did.
	job, finished, err := s.store.FinishJob(ctx, job.ID, StatusSucceeded, "", s.stamp())
	if err != nil {
		return unavailable(err)
	}
	if finished {
		s.publishSucceeded(ctx, job)
	}
	return nil
}

// startJob starts a run of job id and returns the job and its items (none
// when final). A job gone or unreadable is ErrPermanent.
func (s *Service) startJob(ctx context.Context, id string) (Job, []Item, error) {
	job, data, err := s.store.StartJob(ctx, id, s.stamp())
	if errors.Is(err, ErrNotFound) {
		return Job{}, nil, fmt.Errorf("%w: job %s no longer exists", ErrPermanent, id)
	}
	if err != nil {
		return Job{}, nil, unavailable(err)
	}
	if job.Status.Final() {
		return job, nil, nil
	}
	items, err := decodeBatch(data, job)
	if err != nil {
		if ferr := s.Fail(ctx, job.ID, err.Error()); ferr != nil {
			return Job{}, nil, ferr
		}
		return Job{}, nil, fmt.Errorf("%w: job %s: %v", ErrPermanent, job.ID, err)
	}
	return job, items, nil
}

// chunkEnd is where the chunk of items that starts at start ends.
func chunkEnd(items []Item, start int) int {
	end, size := start, 0
	for end < len(items) && end-start < chunkItems && (end == start || size+len(items[end].Text) <= chunkBytes) {
		size += len(items[end].Text)
		end++
	}
	return end
}

// chunk is items[start:end] as stored; an item with no time takes the job's.
func chunk(job Job, items []Item, start, end int) []StoredItem {
	stored := make([]StoredItem, 0, end-start)
	for seq := start; seq < end; seq++ {
		it := items[seq]
		if it.OccurredAt.IsZero() {
			it.OccurredAt = job.CreatedAt
		}
		stored = append(stored, StoredItem{ID: newItemID(), UserID: job.UserID, JobID: job.ID, Seq: seq, Project: job.Project, Item: it, CreatedAt: job.CreatedAt})
	}
	return stored
}

func (s *Service) publishSucceeded(ctx context.Context, job Job) {
	s.cfg.Publish(ctx, job.UserID, EventJobSucceeded, JobSucceeded{JobID: job.ID, ItemsTotal: job.ItemsTotal})
	s.cfg.Publish(ctx, job.UserID, EventMemoryIngested, MemoryIngested{JobID: job.ID, Project: job.Project, Items: job.ItemsTotal})
}

// Fail marks job id failed with reason, unless it is final, and publishes
// job.failed; the items stored so far stay.
func (s *Service) Fail(ctx context.Context, id, reason string) error {
	if reason == "" {
		reason = "processing failed"
	}
	job, finished, err := s.store.FinishJob(ctx, id, StatusFailed, reason, s.stamp())
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: job %s no longer exists", ErrPermanent, id)
	}
	if err != nil {
		return unavailable(err)
	}
	if finished {
		s.cfg.Publish(ctx, job.UserID, EventJobFailed, JobFailed{JobID: job.ID, ItemsDone: job.ItemsDone, Error: job.Error})
	}
	return nil
}
