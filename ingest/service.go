package ingest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/page"
)

// Config tunes a [Service]. Zero fields take the defaults.
type Config struct {
	TTL time.Duration    // how long an idempotency key names its batch
	Now func() time.Time // the clock
	// Publish sends an event to a user's streams without blocking for long.
	Publish       func(ctx context.Context, userID, eventType string, data any)
	MaxItems      int   // each user's quota of items ([QuotaItems])
	MaxQueuedJobs int   // each user's quota of jobs not final ([QuotaJobs])
	Rates         Rates // a field left 0 takes DefaultRates'
	// Yield, when set, is asked by Process after each chunk whether to
	// give its worker back ([ErrYield]) to a more urgent job.
	Yield func(ctx context.Context) bool
}

// The defaults of Config.
const (
	DefaultTTL           = 24 * time.Hour
	DefaultMaxItems      = 1_000_000 // 100 notes a day for 27 years
	DefaultMaxQueuedJobs = 10_000    // a flood meets it within minutes
)

// Limits of the lists.
const (
	DefaultLimit = 20   // a page of jobs or results when the caller names none
	MaxLimit     = 100  // the largest page
	MaxListed    = 1000 // skills or projects listed at most
)

// Service accepts batches once, processes them, and finds what they
// stored. It is safe for concurrent use.
type Service struct {
	store Store
	cfg   Config
	keys  *keyCache
}

// NewService returns a Service over store.
func NewService(store Store, cfg Config) *Service {
	cfg.TTL = cmp.Or(max(cfg.TTL, 0), DefaultTTL)
	cfg.MaxItems = cmp.Or(max(cfg.MaxItems, 0), DefaultMaxItems)
	cfg.MaxQueuedJobs = cmp.Or(max(cfg.MaxQueuedJobs, 0), DefaultMaxQueuedJobs)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Publish == nil {
		cfg.Publish = func(context.Context, string, string, any) {}
	}
	r, d := cfg.Rates, DefaultRates
	cfg.Rates = Rates{cmp.Or(r.IngestPerHour, d.IngestPerHour), cmp.Or(r.QueryPerHour, d.QueryPerHour), cmp.Or(r.ProjectsPerHour, d.ProjectsPerHour), cmp.Or(r.PerSecond, d.PerSecond)}
	return &Service{store: store, cfg: cfg, keys: newKeyCache(keyCacheSize)}
}

// Config returns the service's configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

func (s *Service) stamp() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Ingest durably stores for userID the body of an ingest request and
// enqueues its job, or, within Config.TTL of its [Key]'s first request,
// replays that job. Errors: a [*ValidationError], ErrKeyReused, a
// [*QuotaError], or ErrUnavailable.
func (s *Service) Ingest(ctx context.Context, userID string, raw []byte) (Accepted, error) {
	now := s.stamp()
	sum := sha256.Sum256(raw)
	k, cached := s.keys.get(sum)
	var b Batch
	if !cached {
		var sent []sentItem
		var err error
		if b, sent, err = parse(raw); err != nil {
			return Accepted{}, err
		}
		k = key(b, sent)
		s.keys.put(sum, k)
	}
	job, replayed, err := s.store.Replay(ctx, userID, k.ingestID, k.fingerprint, now)
	switch {
	case replayed:
		return accepted(job, true), nil
	case errors.Is(err, ErrKeyReused):
		return Accepted{}, err
	case err != nil:
		return Accepted{}, unavailable(err)
	}
	if cached { // not a replay: the batch is needed after all
		if b, _, err = parse(raw); err != nil {
			return Accepted{}, err
		}
	}
	job, replayed, err = s.store.Accept(ctx, Acceptance{
		UserID: userID, IngestID: k.ingestID, Fingerprint: k.fingerprint, JobID: newJobID(),
		Project: b.Project, ItemsTotal: len(b.Items), Batch: encodeBatch(b),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.TTL),
		MaxItems: s.cfg.MaxItems, MaxJobs: s.cfg.MaxQueuedJobs,
	})
	if err != nil {
		return Accepted{}, unavailable(err)
	}
	if !replayed {
		s.cfg.Publish(ctx, userID, EventJobQueued, JobQueued{JobID: job.ID, IngestID: job.IngestID, Project: job.Project, ItemsTotal: job.ItemsTotal})
	}
	return accepted(job, replayed), nil
}

func accepted(job Job, replayed bool) Accepted {
	return Accepted{JobID: job.ID, IngestID: job.IngestID, Status: job.Status, Replayed: replayed}
}

// Job returns the user's job id, or ErrNotFound.
func (s *Service) Job(ctx context.Context, userID, id string) (Job, error) {
	if !isUUID(id) {
		return Job{}, ErrNotFound
	}
	j, err := s.store.Job(ctx, userID, id)
	return j, unavailable(err)
}

// Jobs returns a page of up to limit (0: DefaultLimit) of the user's
// jobs, newest first, and the next page's cursor ("" after the last).
func (s *Service) Jobs(ctx context.Context, userID, cursor string, limit int) (jobs []Job, next string, err error) {
	limit, err = pageLimit(limit)
	if err != nil {
		return nil, "", err
	}
	after, err := page.Decode(cursor, isUUID)
	if err != nil {
		return nil, "", invalid("query.cursor", "is not a cursor of this list: start again without it")
	}
	jobs, err = s.store.Jobs(ctx, userID, after, limit+1)
	if err != nil {
		return nil, "", unavailable(err)
	}
	jobs, after = page.Cut(jobs, limit, func(j Job) Cursor { return Cursor{CreatedAt: j.CreatedAt, ID: j.ID} })
	return jobs, page.Encode(after), nil
}

func pageLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultLimit, nil
	}
	if limit < 1 || limit > MaxLimit {
		return 0, invalid("query.limit", fmt.Sprintf("must be 1 to %d", MaxLimit))
	}
	return limit, nil
}

// DeleteItem deletes the user's item id, freeing room under their quota.
func (s *Service) DeleteItem(ctx context.Context, userID, id string) error {
	if !isUUID(id) {
		return ErrNotFound
	}
	return unavailable(s.store.DeleteItem(ctx, userID, id))
}

// Skills returns up to MaxListed skills the user's items name, with counts.
func (s *Service) Skills(ctx context.Context, userID string) ([]Skill, error) {
	skills, err := s.store.Skills(ctx, userID, MaxListed)
	return skills, unavailable(err)
}

// Projects returns up to MaxListed of the user's projects, latest first.
func (s *Service) Projects(ctx context.Context, userID string) ([]Project, error) {
	projects, err := s.store.Projects(ctx, userID, MaxListed)
	return projects, unavailable(err)
}

// Sweep deletes the idempotency keys past their TTL and returns how many.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n, err := s.store.DeleteExpiredKeys(ctx, s.stamp())
	return n, unavailable(err)
}

// AbandonAfter is how long a job may stay unfinished before
// [Service.FailAbandoned] fails it, far past its ten attempts.
const AbandonAfter = 24 * time.Hour

const abandonBatch = 100 // jobs one read of FailAbandoned finds

// FailAbandoned fails the jobs unfinished for longer than AbandonAfter,
// and returns how many.
func (s *Service) FailAbandoned(ctx context.Context) (int, error) {
	before, failed := s.stamp().Add(-AbandonAfter), 0
	for {
		ids, err := s.store.UnfinishedJobs(ctx, before, abandonBatch)
		if err != nil {
			return failed, unavailable(err)
		}
		for _, id := range ids {
			if err := s.Fail(ctx, id, fmt.Sprintf("abandoned: not finished within %v of being accepted", AbandonAfter)); err != nil && !errors.Is(err, ErrPermanent) {
				return failed, err
			}
			failed++
		}
		if len(ids) < abandonBatch {
			return failed, nil
		}
	}
}
