package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// clock is a fake clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// queue records the jobs enqueued, and checks that each was enqueued in
// the transaction that created it.
type queue struct {
	mu   sync.Mutex
	jobs []string
	errs []error
}

func (q *queue) enqueue(ctx context.Context, tx *store.Tx, jobID string, _ int) error {
	var n int
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM jobs WHERE id = $1", jobID).Scan(&n)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil || n != 1 {
		q.errs = append(q.errs, fmt.Errorf("enqueue %s: the transaction holds %d such jobs (%v)", jobID, n, err))
	}
	q.jobs = append(q.jobs, jobID)
	return nil
}

func (q *queue) enqueued() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.errs) > 0 {
		panic(q.errs[0])
	}
	return append([]string(nil), q.jobs...)
}

// An event is one call of Publish.
type event struct {
	user, typ string
	data      any
}

type events struct {
	mu   sync.Mutex
	list []event
}

func (e *events) publish(_ context.Context, user, typ string, data any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, event{user, typ, data})
}

// take returns the events published since the last take.
func (e *events) take() []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.list
	e.list = nil
	return l
}

func types(evs []event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.typ)
	}
	return strings.Join(s, " ")
}

// env is a Service over a real store, with its fakes.
type env struct {
	svc    *ingest.Service
	store  ingest.Store
	db     *store.DB
	queue  *queue
	clock  *clock
	events *events
}

const ttl = time.Hour

func newEnv(t testing.TB, db *store.DB, wrap ...func(ingest.Store) ingest.Store) *env {
	t.Helper()
	e := &env{db: db, queue: &queue{}, clock: &clock{now: t0}, events: &events{}}
	var st ingest.Store = ingest.NewSQLStore(db, e.queue.enqueue)
	for _, w := range wrap {
		st = w(st)
	}
	e.store = st
	e.svc = ingest.NewService(st, ingest.Config{TTL: ttl, Now: e.clock.Now, Publish: e.events.publish})
	for _, u := range []string{"alice", "bob"} {
		if err := store.NewAuthStore(db).CreateUser(context.Background(), auth.User{ID: u, Username: u, PasswordHash: "x", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) ingest(t *testing.T, user, body string) ingest.Accepted {
	t.Helper()
	a, err := e.svc.Ingest(context.Background(), user, []byte(body))
	if err != nil {
		t.Fatalf("Ingest(%.60s): %v", body, err)
	}
	return a
}

func (e *env) process(t *testing.T, jobID string) {
	t.Helper()
	if err := e.svc.Process(context.Background(), jobID); err != nil {
		t.Fatalf("Process: %v", err)
	}
}

func (e *env) jobs(t *testing.T, user string) []ingest.Job {
	t.Helper()
	jobs, _, err := e.svc.Jobs(context.Background(), user, "", ingest.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

const body = `{"project":"brain","items":[{"text":"the queue retries with backoff"},{"text":"idempotency keys expire after a day","skill":"go"}]}`

func TestIngestOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()

		t.Run("SameContentTwice", func(t *testing.T) {
			first := e.ingest(t, "alice", body)
			if first.Replayed || first.Status != ingest.StatusQueued || len(first.IngestID) != 64 || len(first.JobID) != 36 {
				t.Fatalf("first = %+v, want a new queued job", first)
			}
			// The same content, spaced and ordered otherwise.
			again := e.ingest(t, "alice", "{ \"items\": [{\"text\":\"the queue retries with backoff\"},{\"skill\":\"go\",\"text\":\"idempotency keys expire after a day\"}],\n\"project\": \"brain\" }")
			if again.JobID != first.JobID || again.IngestID != first.IngestID || !again.Replayed {
				t.Fatalf("again = %+v, want a replay of %+v", again, first)
			}
			if q := e.queue.enqueued(); len(q) != 1 || q[0] != first.JobID {
				t.Fatalf("enqueued %v, want only %s", q, first.JobID)
			}
			if jobs := e.jobs(t, "alice"); len(jobs) != 1 || jobs[0].ID != first.JobID || jobs[0].ItemsTotal != 2 || jobs[0].Project != "brain" {
				t.Fatalf("jobs = %+v, want the one job", jobs)
			}
			evs := e.events.take()
			if len(evs) != 1 || evs[0].typ != ingest.EventJobQueued || evs[0].user != "alice" ||
				evs[0].data != (ingest.JobQueued{JobID: first.JobID, IngestID: first.IngestID, Project: "brain", ItemsTotal: 2}) {
				t.Fatalf("events = %+v, want one job.queued", evs)
			}
		})

		t.Run("AnotherUsersIdenticalBatch", func(t *testing.T) {
			a := e.ingest(t, "alice", body)
			b := e.ingest(t, "bob", body)
			if b.Replayed || b.JobID == a.JobID || b.IngestID != a.IngestID {
				t.Fatalf("bob's batch = %+v; alice's %+v: want bob's own job under the same key", b, a)
			}
			if _, err := e.svc.Job(ctx, "alice", b.JobID); !errors.Is(err, ingest.ErrNotFound) {
				t.Fatalf("alice reads bob's job: err = %v, want ErrNotFound", err)
			}
			if j, err := e.svc.Job(ctx, "bob", b.JobID); err != nil || j.UserID != "bob" {
				t.Fatalf("bob's job = %+v, %v", j, err)
			}
		})

		t.Run("ExplicitKeyReused", func(t *testing.T) {
			id := strings.Repeat("5e", 32)
			withID := func(text string) string {
				return `{"ingest_id":"` + id + `","project":"brain","items":[{"text":"` + text + `"}]}`
			}
			a := e.ingest(t, "alice", withID("one"))
			if a.IngestID != id || a.Replayed {
				t.Fatalf("accepted %+v, want ingest_id %s", a, id)
			}
			n := len(e.queue.enqueued())
			if _, err := e.svc.Ingest(ctx, "alice", []byte(withID("two"))); !errors.Is(err, ingest.ErrKeyReused) {
				t.Fatalf("other content under the key: err = %v, want ErrKeyReused", err)
			}
			var ve *ingest.ValidationError
			if _, err := e.svc.Ingest(ctx, "alice", []byte(`{"ingest_id":"`+id+`","project":"brain","items":[]}`)); !errors.As(err, &ve) {
				t.Fatalf("an invalid batch under the key: err = %v, want its *ValidationError first", err)
			}
			if r := e.ingest(t, "alice", withID("one")); r.JobID != a.JobID || !r.Replayed {
				t.Fatalf("the same content under the key: %+v, want a replay", r)
			}
			if got := len(e.queue.enqueued()); got != n {
				t.Fatalf("enqueued %d more, want none", got-n)
			}
			// Bob's keys are his own.
			if b := e.ingest(t, "bob", withID("two")); b.Replayed || b.IngestID != id {
				t.Fatalf("bob under alice's key: %+v, want a new job", b)
			}
		})

		t.Run("TTL", func(t *testing.T) {
			const b = `{"project":"ttl","items":[{"text":"expiring"}]}`
			first := e.ingest(t, "alice", b)
			e.clock.Advance(ttl - time.Millisecond)
			if r := e.ingest(t, "alice", b); r.JobID != first.JobID || !r.Replayed {
				t.Fatalf("just before the TTL: %+v, want a replay", r)
			}
			e.clock.Advance(time.Millisecond)
			second := e.ingest(t, "alice", b)
			if second.Replayed || second.JobID == first.JobID {
				t.Fatalf("at the TTL: %+v, want a new job", second)
			}
			// The new key lives a TTL from its own first request, not the old one's.
			e.clock.Advance(ttl - time.Millisecond)
			if r := e.ingest(t, "alice", b); r.JobID != second.JobID {
				t.Fatalf("within the new key's TTL: %+v, want a replay of %s", r, second.JobID)
			}
		})

		t.Run("Sweep", func(t *testing.T) {
			e.clock.Advance(24 * ttl)
			n, err := e.svc.Sweep(ctx)
			if err != nil || n == 0 {
				t.Fatalf("Sweep = %d, %v; want the expired keys deleted", n, err)
			}
			if n, err := e.svc.Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("Sweep again = %d, %v; want 0", n, err)
			}
			// The jobs stay; the same batch now is a new job.
			before := len(e.jobs(t, "alice"))
			if r := e.ingest(t, "alice", body); r.Replayed {
				t.Fatalf("after the sweep: %+v, want a new job", r)
			}
			if got := len(e.jobs(t, "alice")); got != before+1 {
				t.Fatalf("jobs: %d, want %d", got, before+1)
			}
		})

		t.Run("Invalid", func(t *testing.T) {
			n := len(e.queue.enqueued())
			for name, b := range map[string]string{
				"unknown member":      `{"project":"p","items":[{"text":"x"}],"priority":1}`,
				"unknown item member": `{"project":"p","items":[{"text":"x","score":1}]}`,
				"no items":            `{"project":"p","items":[]}`,
				"bad ingest_id":       `{"ingest_id":"xyz","project":"p","items":[{"text":"x"}]}`,
				"lone surrogate":      `{"project":"p","items":[{"text":"\udc00"}]}`,
			} {
				var ve *ingest.ValidationError
				if _, err := e.svc.Ingest(ctx, "alice", []byte(b)); !errors.As(err, &ve) {
					t.Errorf("%s: err = %v, want a *ValidationError", name, err)
				}
			}
			if got := len(e.queue.enqueued()); got != n {
				t.Fatalf("invalid batches enqueued %d jobs", got-n)
			}
		})
	})
}

// A replay is answered from its key: no transaction, nothing written.
func TestReplayWritesNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		c := &countingStore{}
		e := newEnv(t, db, func(s ingest.Store) ingest.Store { c.Store = s; return c })
		first := e.ingest(t, "alice", body)
		for range 3 {
			if r := e.ingest(t, "alice", body); !r.Replayed || r.JobID != first.JobID {
				t.Fatalf("again: %+v, want a replay of %s", r, first.JobID)
			}
		}
		if n := c.accepts.Load(); n != 1 {
			t.Fatalf("Accept called %d times, want once: a replay needs no transaction", n)
		}
	})
}

// countingStore counts the calls of Accept.
type countingStore struct {
	ingest.Store
	accepts atomic.Int32
}

func (c *countingStore) Accept(ctx context.Context, a ingest.Acceptance) (ingest.Job, bool, error) {
	c.accepts.Add(1)
	return c.Store.Accept(ctx, a)
}

// TestIngestConcurrent: identical requests at once make one job, and
// every one of them is told its id.
func TestIngestConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		// 200 writers queue for SQLite's one write lock; on a loaded machine
		// under -race the last waits longer than the 5 s a request may. What
		// is tested is that they make one job, not how fast.
		db.Timeout = time.Minute
		e := newEnv(t, db)
		const n = 200
		var wg sync.WaitGroup
		got := make([]ingest.Accepted, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { got[i], errs[i] = e.svc.Ingest(context.Background(), "alice", []byte(body)) })
		}
		wg.Wait()
		fresh := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			if got[i].JobID != got[0].JobID {
				t.Fatalf("request %d got job %s, request 0 %s", i, got[i].JobID, got[0].JobID)
			}
			if !got[i].Replayed {
				fresh++
			}
		}
		if fresh != 1 {
			t.Fatalf("%d requests made a job, want 1", fresh)
		}
		if q := e.queue.enqueued(); len(q) != 1 {
			t.Fatalf("enqueued %d jobs, want 1", len(q))
		}
		if jobs := e.jobs(t, "alice"); len(jobs) != 1 {
			t.Fatalf("%d jobs, want 1", len(jobs))
		}
	})
}

func TestJobsList(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		var want []string // newest first
		for i := range 7 {
			a := e.ingest(t, "alice", fmt.Sprintf(`{"project":"p","items":[{"text":"note %d"}]}`, i))
			want = append([]string{a.JobID}, want...)
			if i%2 == 0 { // pairs of jobs share a time: the id orders them
				e.clock.Advance(time.Second)
			}
		}
		e.ingest(t, "bob", body)
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			jobs, next, err := e.svc.Jobs(ctx, "alice", cursor, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) > 3 || page > 3 {
				t.Fatalf("page %d has %d jobs", page, len(jobs))
			}
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		all := e.jobs(t, "alice")
		for i := range all {
			if i > 0 && (all[i].CreatedAt.After(all[i-1].CreatedAt) || all[i].CreatedAt.Equal(all[i-1].CreatedAt) && all[i].ID < all[i-1].ID) {
				t.Fatalf("jobs out of order at %d: %+v after %+v", i, all[i], all[i-1])
			}
		}
		if len(got) != len(want) || len(all) != len(want) {
			t.Fatalf("pages gave %d jobs, one list %d; want %d", len(got), len(all), len(want))
		}
		for i := range all {
			if got[i] != all[i].ID {
				t.Fatalf("paged job %d = %s, want %s", i, got[i], all[i].ID)
			}
		}
		for _, limit := range []int{-1, ingest.MaxLimit + 1} {
			var ve *ingest.ValidationError
			if _, _, err := e.svc.Jobs(ctx, "alice", "", limit); !errors.As(err, &ve) {
				t.Errorf("limit %d: err = %v, want a *ValidationError", limit, err)
			}
		}
		var ve *ingest.ValidationError
		if _, _, err := e.svc.Jobs(ctx, "alice", "bm90LWEtY3Vyc29y", 3); !errors.As(err, &ve) || ve.Errors[0].Location != "query.cursor" {
			t.Errorf("a made-up cursor: err = %v, want a *ValidationError at query.cursor", err)
		}
		if _, err := e.svc.Job(ctx, "alice", "not-a-uuid"); !errors.Is(err, ingest.ErrNotFound) {
			t.Errorf("Job(not-a-uuid) = %v, want ErrNotFound", err)
		}
	})
}

// An ingest past a quota is a *QuotaError, not a store failure, and
// leaves nothing; a replay still answers; a failed job gives back the
// items it never stored, and a deleted item itself.
func TestIngestQuotas(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		svc := ingest.NewService(e.store, ingest.Config{Now: e.clock.Now, MaxItems: 3, MaxQueuedJobs: 2})
		if c := svc.Config(); c.MaxItems != 3 || c.MaxQueuedJobs != 2 || c.TTL != ingest.DefaultTTL {
			t.Fatalf("Config() = %+v", c)
		}
		first, err := svc.Ingest(ctx, "alice", []byte(batchOf("q", 2)))
		if err != nil {
			t.Fatal(err)
		}
		over := func(body string, want ingest.QuotaError) {
			t.Helper()
			_, err := svc.Ingest(ctx, "alice", []byte(body))
			var qe *ingest.QuotaError
			if !errors.As(err, &qe) || *qe != want || errors.Is(err, ingest.ErrUnavailable) {
				t.Fatalf("Ingest = %v, want %+v", err, want)
			}
		}
		over(batchOf("r", 2), ingest.QuotaError{Quota: ingest.QuotaItems, Limit: 3, Used: 2, Asked: 2})
		if again, err := svc.Ingest(ctx, "alice", []byte(batchOf("q", 2))); err != nil || !again.Replayed || again.JobID != first.JobID {
			t.Fatalf("the first batch again, at the quota = %+v, %v; want its replay", again, err)
		}
		if jobs := e.jobs(t, "alice"); len(jobs) != 1 {
			t.Fatalf("%d jobs, want the first alone", len(jobs))
		}
		// The job fails before storing anything: its 2 items come back.
		if err := svc.Fail(ctx, first.JobID, "gave up"); err != nil {
			t.Fatal(err)
		}
		second, err := svc.Ingest(ctx, "alice", []byte(batchOf("r", 2)))
		if err != nil {
			t.Fatalf("after the failed job gave its items back: %v", err)
		}
		if err := svc.Process(ctx, second.JobID); err != nil {
			t.Fatal(err)
		}
		// 2 stored: 2 more do not fit, until one is deleted.
		over(batchOf("s", 2), ingest.QuotaError{Quota: ingest.QuotaItems, Limit: 3, Used: 2, Asked: 2})
		res, err := svc.Query(ctx, "alice", ingest.Query{Q: "note", Project: "r"})
		if err != nil || len(res.Results) != 2 {
			t.Fatalf("Query = %+v, %v", res, err)
		}
		if err := svc.DeleteItem(ctx, "alice", res.Results[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Ingest(ctx, "alice", []byte(batchOf("s", 2))); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
		// Jobs: 2 may be queued; the third waits for one to finish.
		if _, err := svc.Ingest(ctx, "bob", []byte(batchOf("b1", 1))); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Ingest(ctx, "bob", []byte(batchOf("b2", 1))); err != nil {
			t.Fatal(err)
		}
		var qe *ingest.QuotaError
		if _, err := svc.Ingest(ctx, "bob", []byte(batchOf("b3", 1))); !errors.As(err, &qe) || *qe != (ingest.QuotaError{Quota: ingest.QuotaJobs, Limit: 2, Used: 2, Asked: 1}) {
			t.Fatalf("bob's third job = %v, want the jobs quota", err)
		}
	})
}

// A job the queue lost (never finished, a day after it was accepted) is
// failed by FailAbandoned, which gives its share of the quotas back; a
// younger one is left to the queue.
func TestFailAbandoned(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		svc := ingest.NewService(e.store, ingest.Config{Now: e.clock.Now, MaxQueuedJobs: 1, Publish: e.events.publish})
		lost, err := svc.Ingest(ctx, "alice", []byte(batchOf("lost", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := svc.FailAbandoned(ctx); err != nil || n != 0 {
			t.Fatalf("FailAbandoned at once = %d, %v; want none", n, err)
		}
		e.clock.Advance(ingest.AbandonAfter - time.Minute)
		if _, err := svc.Ingest(ctx, "alice", []byte(batchOf("next", 1))); err == nil {
			t.Fatal("alice's second job passed her quota of one queued job")
		}
		e.clock.Advance(time.Minute + time.Millisecond)
		young, err := svc.Ingest(ctx, "bob", []byte(batchOf("young", 1)))
		if err != nil {
			t.Fatal(err)
		}
		e.events.take()
		if n, err := svc.FailAbandoned(ctx); err != nil || n != 1 {
			t.Fatalf("FailAbandoned a day later = %d, %v; want alice's job", n, err)
		}
		if j, err := e.store.Job(ctx, "alice", lost.JobID); err != nil || j.Status != ingest.StatusFailed || !strings.Contains(j.Error, "abandoned") {
			t.Fatalf("alice's job = %+v, %v; want failed as abandoned", j, err)
		}
		if j, _ := e.store.Job(ctx, "bob", young.JobID); j.Status != ingest.StatusQueued {
			t.Fatalf("bob's new job = %s, want still queued", j.Status)
		}
		if evs := e.events.take(); len(evs) != 1 || evs[0].typ != ingest.EventJobFailed || evs[0].user != "alice" {
			t.Fatalf("events %+v, want alice's job.failed", evs)
		}
		if _, err := svc.Ingest(ctx, "alice", []byte(batchOf("next", 1))); err != nil {
			t.Fatalf("alice's next job after hers was failed: %v", err)
		}
	})
}
