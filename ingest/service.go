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
	// TTL is how long an idempotency key names its batch, from the first
	// request. Default 24 h.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Publish sends an event to a user's streams without blocking for
	// long. Default: events go nowhere.
	Publish func(ctx context.Context, userID, eventType string, data any)

	// MaxItems is each user's quota of items ([QuotaItems]): stored, or
	// in batches whose jobs are not final. Default DefaultMaxItems.
	MaxItems int
	// MaxQueuedJobs is each user's quota of jobs that are not final
	// ([QuotaJobs]). Default DefaultMaxQueuedJobs.
	MaxQueuedJobs int
	// Rates are the rates of the operations' budgets; a field left 0
	// takes DefaultRates'.
	Rates Rates
	// Yield, when set, is asked by Process after each chunk of a job
	// whether to give its worker back ([ErrYield]) to a more urgent job.
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

// Service is ingestion: accepting batches once, processing them, and
// finding what they stored. It is safe for concurrent use.
type Service struct {
	store Store
	cfg   Config
	keys  *keyCache
}

// NewService returns a Service over store.
func NewService(store Store, cfg Config) *Service {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Publish == nil {
		cfg.Publish = func(context.Context, string, string, any) {}
	}
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = DefaultMaxItems
	}
	if cfg.MaxQueuedJobs <= 0 {
		cfg.MaxQueuedJobs = DefaultMaxQueuedJobs
	}
	r, d := cfg.Rates, DefaultRates
	cfg.Rates = Rates{cmp.Or(r.IngestPerHour, d.IngestPerHour), cmp.Or(r.QueryPerHour, d.QueryPerHour), cmp.Or(r.ProjectsPerHour, d.ProjectsPerHour), cmp.Or(r.PerSecond, d.PerSecond)}
	return &Service{store: store, cfg: cfg, keys: newKeyCache(keyCacheSize)}
}

// Config returns the service's configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// stamp is now as stored: UTC, to the millisecond.
func (s *Service) stamp() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Ingest accepts for userID the body of an ingest request, raw as sent
// (see [Parse]); without an error, the batch is durably stored and its job
// enqueued. Within Config.TTL of its key's ([Key]) first request, the same
// content under the user's same key is a replay of the first job, and
// other content is ErrKeyReused. A new batch takes from the user's quotas.
//
// Errors: a [*ValidationError], ErrKeyReused, a [*QuotaError], or
// ErrUnavailable. The keys of valid bodies sent lately are remembered by
// the SHA-256 of their bytes, so a replay is not parsed again.
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
	case errors.Is(err, ErrKeyReused): // answered without a write transaction
		return Accepted{}, err
	case err != nil:
		return Accepted{}, unavailable(err)
	}
	if cached { // valid bytes, but not a live key of this user's: read them after all
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

// accepted is the answer to an ingest of job.
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
// jobs, newest first, after cursor, and the next page's cursor ("" after
// the last). A bad limit or cursor is a [*ValidationError].
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

// pageLimit checks a page size: 0 is DefaultLimit.
func pageLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultLimit, nil
	}
	if limit < 1 || limit > MaxLimit {
		return 0, invalid("query.limit", fmt.Sprintf("must be 1 to %d", MaxLimit))
	}
	return limit, nil
}

// DeleteItem deletes the user's item id, freeing room under their quota
// of items; another user's item, or none, is ErrNotFound.
func (s *Service) DeleteItem(ctx context.Context, userID, id string) error {
	if !isUUID(id) {
		return ErrNotFound
	}
	return unavailable(s.store.DeleteItem(ctx, userID, id))
}

// Skills returns the skills the user's items name, with how many items
// name each, most first; at most MaxListed.
func (s *Service) Skills(ctx context.Context, userID string) ([]Skill, error) {
	skills, err := s.store.Skills(ctx, userID, MaxListed)
	return skills, unavailable(err)
}

// Projects returns the projects the user has items in, with how many and
// when the newest was accepted, the most recent first; at most MaxListed.
func (s *Service) Projects(ctx context.Context, userID string) ([]Project, error) {
	projects, err := s.store.Projects(ctx, userID, MaxListed)
	return projects, unavailable(err)
}

// Sweep deletes the idempotency keys past their TTL, which Ingest ignores
// already, and returns how many.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n, err := s.store.DeleteExpiredKeys(ctx, s.stamp())
	return n, unavailable(err)
}

// AbandonAfter is how long a job may stay unfinished before
// [Service.FailAbandoned] fails it: far past its ten attempts (about four
// hours), so such a job is one the queue lost.
const AbandonAfter = 24 * time.Hour

// abandonBatch is how many abandoned jobs one read of FailAbandoned finds.
const abandonBatch = 100

// FailAbandoned fails, as Fail does, the jobs unfinished for longer than
// AbandonAfter, and returns how many.
func (s *Service) FailAbandoned(ctx context.Context) (int, error) {
	before, failed := s.stamp().Add(-AbandonAfter), 0
	for {
		ids, err := s.store.UnfinishedJobs(ctx, before, abandonBatch)
		if err != nil {
			return failed, unavailable(err)
		}
		for _, id := range ids {
			if err := s.fail(ctx, id, fmt.Sprintf("abandoned: not finished within %v of being accepted", AbandonAfter)); err != nil && !errors.Is(err, ErrPermanent) {
				return failed, err
			}
			failed++
		}
		if len(ids) < abandonBatch {
			return failed, nil
		}
	}
}
