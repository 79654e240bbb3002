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
	// request: within it the same batch sent again is a replay, and the
	// same key with other content is refused. After it the key may be
	// used afresh. Default 24 h.
	TTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Publish sends an event to a user's streams (see events.go). It must
	// not block for long: Process calls it between its writes. Default:
	// events go nowhere.
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
	// Yield, when set, is asked by Process after each chunk of a job,
	// while items are left, whether the job should give its worker back
	// ([ErrYield]): the queue says yes when a more urgent job waits for
	// a worker, so that a large batch does not hold one for seconds while
	// another user's job waits. Default: a job keeps its worker.
	Yield func(ctx context.Context) bool
}

// The defaults of Config.
const (
	// DefaultTTL: a client that retries a batch retries it within a day,
	// or not at all.
	DefaultTTL = 24 * time.Hour
	// DefaultMaxItems: a hundred notes a day, every day, take 27 years
	// to reach it; a memory that does is due for pruning, not more room.
	DefaultMaxItems = 1_000_000
	// DefaultMaxQueuedJobs: a client that sends batches one after the
	// other never has more than a few waiting; one that floods from 32
	// connections, as bench/ingestflood does, outruns the workers by about
	// 200 small batches a second, and meets it after a minute or so.
	DefaultMaxQueuedJobs = 10_000
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

// Ingest accepts the body of an ingest request, raw exactly as the client
// sent it (see [Parse] for its form), for userID. When it returns without
// an error the batch is durably stored and its job enqueued.
//
// The batch's key is its ingest_id, or one derived from its content (see
// [Key]). Within Config.TTL of the key's first request, the same content
// under the same key is a replay: Ingest returns the first request's job
// with Replayed true, and enqueues nothing. The same key with other
// content is ErrKeyReused. Keys are the user's own: another user's
// identical batch is another job.
//
// A new batch takes its items and one job from the user's quotas
// (Config.MaxItems, Config.MaxQueuedJobs); a replay takes nothing.
//
// Errors: a [*ValidationError] for a body that breaks the rules,
// ErrKeyReused, a [*QuotaError] when a quota is reached, or
// ErrUnavailable when the store failed. The body's errors come first: a
// body is parsed before its key is looked up.
//
// A replay is cheap: the keys of valid batches sent lately are
// remembered by the SHA-256 of their bytes, so the same bytes again are
// answered from the key and one read, without being parsed again.
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

// Jobs returns a page of up to limit of the user's jobs, newest first,
// starting after cursor ("" for the first page), and the cursor of the
// next page ("" when there is none). A limit of 0 is DefaultLimit; one
// outside 1 to MaxLimit, or a cursor this list did not give, is a
// [*ValidationError].
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

// DeleteItem deletes the user's item id: it is found no more, and it
// frees room under the user's quota of items. Another user's item, or
// none, is ErrNotFound.
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

// Sweep deletes the idempotency keys past their TTL, and returns how
// many. Run it now and then (once an hour is plenty): expired keys are
// already ignored by Ingest, so Sweep only frees their space.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n, err := s.store.DeleteExpiredKeys(ctx, s.stamp())
	return n, unavailable(err)
}

// AbandonAfter is how long a job may stay unfinished before
// [Service.FailAbandoned] fails it: far longer than its attempts and the
// queue's back-off between them take (ten attempts span about four
// hours), so a job this old and unfinished is one the queue has lost (it
// gave up on it while its failure could not be recorded, say). Until it
// is failed, it holds its share of its user's quotas.
const AbandonAfter = 24 * time.Hour

// abandonBatch is how many abandoned jobs one read of FailAbandoned finds.
const abandonBatch = 100

// FailAbandoned fails the jobs that have been unfinished for longer than
// AbandonAfter, as Fail does (job.failed published, the quotas given
// back), and returns how many. Run it now and then, beside Sweep.
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
