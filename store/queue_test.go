package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/riverqueue/river"
)

// testArgs are the arguments of the tests' job kind: a job id.
type testArgs struct {
	JobID string `json:"job_id"`
}

func (testArgs) Kind() string { return "test" }

// unknownArgs are a kind no test adds a worker for.
type unknownArgs struct{}

func (unknownArgs) Kind() string { return "unknown" }

// qopts are a test queue's options and its one worker's.
type qopts struct {
	Workers, MaxAttempts                  int
	JobTimeout, RescueAfter, PollInterval time.Duration
	GiveUp                                func(ctx context.Context, jobID string, err error)
}

// quick is o for a test: a short poll.
func quick(t *testing.T, o qopts) qopts {
	if o.PollInterval == 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	return o
}

// newQueue is a Queue on db with one worker, of testArgs, that calls work
// with the job's id: no random delay before River's maintenance, River's
// warnings and errors in the test's log.
func newQueue(t *testing.T, db *store.DB, work func(context.Context, string) error, o qopts) (*store.Queue, error) {
	q, err := store.NewQueue(db, store.QuickStart(store.QueueOptions{
		MaxAttempts: o.MaxAttempts, JobTimeout: o.JobTimeout, RescueAfter: o.RescueAfter, PollInterval: o.PollInterval,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}))
	if err != nil {
		return nil, err
	}
	w := store.Worker[testArgs]{Workers: o.Workers, Work: func(ctx context.Context, job *river.Job[testArgs]) error { return work(ctx, job.Args.JobID) }}
	if o.GiveUp != nil {
		w.GiveUp = func(ctx context.Context, job *river.Job[testArgs], err error) { o.GiveUp(ctx, job.Args.JobID, err) }
	}
	return q, store.AddWorker(q, w)
}

// eachDialect runs f on each dialect, in parallel with the other tests
// that do: a queue's tests mostly wait for River's polls.
func eachDialect(t *testing.T, f func(t *testing.T, d store.Dialect)) {
	t.Parallel()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// onEachDB runs f on a fresh database of each dialect, as eachDialect.
func onEachDB(t *testing.T, f func(t *testing.T, db *store.DB)) {
	eachDialect(t, func(t *testing.T, d store.Dialect) { f(t, storetest.Open(t, d)) })
}

// startQueue starts a Queue on db, stopped when the test ends.
func startQueue(t *testing.T, db *store.DB, work func(context.Context, string) error, o qopts) *store.Queue {
	t.Helper()
	q, err := newQueue(t, db, work, quick(t, o))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return q
}

// enqueue enqueues jobID in a transaction it commits, or rolls back.
func enqueue(t *testing.T, db *store.DB, q *store.Queue, jobID string, commit bool) {
	t.Helper()
	enqueueAt(t, db, q, jobID, 1, commit)
}

// enqueueAt is enqueue with River's priority.
func enqueueAt(t *testing.T, db *store.DB, q *store.Queue, jobID string, priority int, commit bool) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := q.EnqueueTx(ctx, tx, testArgs{JobID: jobID}, &river.InsertOpts{Priority: priority}); err != nil {
		t.Fatal(err)
	}
	if commit {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// riverJob is what River keeps of a job.
type riverJob struct {
	state   string
	attempt int
	errors  string // River's list of the attempts' errors, as text
}

// jobOf reads the River job of jobID; ok is false when there is none.
func jobOf(t *testing.T, db *store.DB, jobID string) (j riverJob, ok bool) {
	t.Helper()
	q := `SELECT state::text, attempt, COALESCE(errors::text, '') FROM river_job WHERE args->>'job_id' = $1`
	if db.Dialect == store.SQLite {
		q = `SELECT state, attempt, COALESCE(json(errors), '') FROM river_job WHERE json_extract(args, '$.job_id') = $1`
	}
	err := db.QueryRowContext(context.Background(), q, jobID).Scan(&j.state, &j.attempt, &j.errors)
	if errors.Is(err, sql.ErrNoRows) {
		return j, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return j, true
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitState waits until jobID's River job is in state, and returns it.
func waitState(t *testing.T, db *store.DB, jobID, state string) riverJob {
	t.Helper()
	var j riverJob
	waitFor(t, fmt.Sprintf("job %s to be %s", jobID, state), func() bool {
		j, _ = jobOf(t, db, jobID)
		return j.state == state
	})
	return j
}

// counter counts work's calls per job id.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[id]++
	return c.calls[id]
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// Migrate makes River's tables in the connection's schema (on
// PostgreSQL, the test's own). Then, on one Queue: a job enqueued in a
// committed transaction is worked, with its id; one enqueued in a
// transaction rolled back does not exist; a transient error is retried,
// after River's back-off, and the retry succeeds; an error wrapping
// ErrPermanent ends its job at once, with its message, though attempts
// are left.
func TestQueueWorksJobs(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		tables := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('river_job', 'river_leader', 'river_migration', 'river_queue')`
		if db.Dialect == store.Postgres {
			tables = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('river_job', 'river_leader', 'river_migration', 'river_queue')`
		}
		var n int
		if err := db.QueryRowContext(ctx, tables).Scan(&n); err != nil || n != 4 {
			t.Fatalf("River's tables in the database's schema: %d, %v; want 4", n, err)
		}

		var c counter
		q := startQueue(t, db, func(ctx context.Context, id string) error {
			switch calls := c.add(id); {
			case id == "flaky" && calls == 1:
				return errors.New("the model server is busy")
			case id == "broken":
				return fmt.Errorf("batch %s is not valid JSON: %w", id, store.ErrPermanent)
			}
			return nil
		}, qopts{MaxAttempts: 5})
		enqueue(t, db, q, "rolled-back", false)
		enqueue(t, db, q, "committed", true)
		enqueue(t, db, q, "flaky", true)
		enqueue(t, db, q, "broken", true)

		if j := waitState(t, db, "committed", "completed"); j.attempt != 1 || c.get("committed") != 1 {
			t.Errorf("committed: %+v after %d calls; want completed at once", j, c.get("committed"))
		}
		if j := waitState(t, db, "flaky", "completed"); j.attempt != 2 || c.get("flaky") != 2 || !strings.Contains(j.errors, "the model server is busy") {
			t.Errorf("flaky: %+v after %d calls; want completed at attempt 2, the first error kept", j, c.get("flaky"))
		}
		// Cancelled is final: River never fetches the job again.
		if j := waitState(t, db, "broken", "cancelled"); j.attempt != 1 || c.get("broken") != 1 || !strings.Contains(j.errors, "batch broken is not valid JSON") {
			t.Errorf("broken: %+v after %d calls; want cancelled after one attempt, with its message", j, c.get("broken"))
		}
		if _, ok := jobOf(t, db, "rolled-back"); ok || c.get("rolled-back") != 0 {
			t.Error("the job enqueued in a rolled-back transaction exists")
		}
		// A kind no worker was added for is refused: nothing would work it.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := q.EnqueueTx(ctx, tx, unknownArgs{}, nil); err == nil {
			t.Error("EnqueueTx of a kind without a worker: no error")
		}
	})
}

// openReplicas opens n DBs on one fresh, migrated database, as n replicas
// would: one PostgreSQL schema, or one SQLite file.
func openReplicas(t *testing.T, d store.Dialect, n int) []*store.DB {
	t.Helper()
	url, dir := storetest.URL(t, d), t.TempDir()
	var dbs []*store.DB
	for range n {
		db, err := store.Open(context.Background(), url, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	return dbs
}

// Two replicas share the queue: four jobs, two workers each, and every
// job waits until four run at once, which they can only do if each
// replica runs two. Each job is worked once.
func TestQueueReplicasShareJobs(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		dbs := openReplicas(t, d, 2)
		const jobs = 4
		var (
			c       counter
			running atomic.Int32
			all     = make(chan struct{})
			byQueue [2]atomic.Int32
			qs      []*store.Queue
		)
		for i, db := range dbs {
			qs = append(qs, startQueue(t, db, func(ctx context.Context, id string) error {
				c.add(id)
				byQueue[i].Add(1)
				if running.Add(1) == jobs {
					close(all)
				}
				select {
				case <-all:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, qopts{Workers: 2}))
		}
		for i := range jobs {
			enqueue(t, dbs[0], qs[0], fmt.Sprint("job-", i), true)
		}
		for i := range jobs {
			id := fmt.Sprint("job-", i)
			waitState(t, dbs[1], id, "completed")
			if n := c.get(id); n != 1 {
				t.Errorf("%s worked %d times, want 1", id, n)
			}
		}
		if a, b := byQueue[0].Load(), byQueue[1].Load(); a != 2 || b != 2 {
			t.Fatalf("the replicas worked %d and %d jobs, want 2 each", a, b)
		}
	})
}

// A job left running by a replica that died (here: marked running an hour
// ago by a replica that is gone) is rescued by the Queue that leads after
// it, once RescueAfter has passed, and worked again.
//
// The rescue makes the job retryable; River's scheduler makes it available
// when its back-off is over. The scheduler runs as a leader starts, then
// every 5 s: when it ran just before the rescue, the job waits for its
// next run. So that the test need not wait, the Queue that rescued the job
// stops, and the one that leads next (a restart) runs the scheduler at
// once.
func TestQueueRescuesAbandonedJobs(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		dead, err := newQueue(t, db, func(context.Context, string) error { return nil }, quick(t, qopts{}))
		if err != nil {
			t.Fatal(err)
		}
		enqueue(t, db, dead, "orphan", true)
		mark := `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour', attempted_by = ARRAY['dead-replica'] WHERE args->>'job_id' = $1`
		if db.Dialect == store.SQLite {
			mark = `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = datetime('now', '-1 hour'), attempted_by = json_array('dead-replica') WHERE json_extract(args, '$.job_id') = $1`
		}
		if _, err := db.ExecContext(ctx, mark, "orphan"); err != nil {
			t.Fatal(err)
		}

		var c counter
		work := func(ctx context.Context, id string) error {
			c.add(id)
			return nil
		}
		opts := quick(t, qopts{JobTimeout: 500 * time.Millisecond, RescueAfter: time.Second})
		rescuer, err := newQueue(t, db, work, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := rescuer.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the rescue", func() bool {
			j, _ := jobOf(t, db, "orphan")
			return strings.Contains(j.errors, "Stuck job rescued")
		})
		if err := rescuer.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		startQueue(t, db, work, opts)
		j := waitState(t, db, "orphan", "completed")
		if c.get("orphan") != 1 || j.attempt != 2 {
			t.Fatalf("job = %+v after %d calls; want worked once more, at attempt 2", j, c.get("orphan"))
		}
	})
}

// Stop lets a running job finish; when its context ends first, it cancels
// the job, which is then available again, its attempt not counted.
func TestQueueStop(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		started := make(chan string, 2)
		release := make(chan struct{})
		var cancelled atomic.Bool
		q, err := newQueue(t, db, func(ctx context.Context, id string) error {
			started <- id
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				cancelled.Store(true)
				return fmt.Errorf("job %s: %w", id, ctx.Err())
			}
		}, quick(t, qopts{}))
		if err != nil {
			t.Fatal(err)
		}
		start := func() {
			if err := q.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
		}

		// A graceful stop waits for the running job.
		start()
		enqueue(t, db, q, "finishes", true)
		<-started
		stopped := make(chan error, 1)
		go func() { stopped <- q.Stop(context.Background()) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a job was running", err)
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if j, _ := jobOf(t, db, "finishes"); j.state != "completed" || cancelled.Load() {
			t.Fatalf("job = %+v, cancelled = %v; want completed, never cancelled", j, cancelled.Load())
		}

		// A stop whose context ends cancels the running job.
		release = make(chan struct{})
		start()
		enqueue(t, db, q, "cut-short", true)
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := q.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop = %v, want the context's error", err)
		}
		if j, _ := jobOf(t, db, "cut-short"); j.state != "available" || j.attempt != 0 || !cancelled.Load() {
			t.Fatalf("job = %+v, cancelled = %v; want available again, attempt not counted", j, cancelled.Load())
		}
	})
}

// When a job's last attempt fails — by an error, a panic or its timeout —
// GiveUp is told, so the job's own record can say it failed; an earlier
// failed attempt, or one that succeeds, tells it nothing.
func TestQueueGivesUp(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		var mu sync.Mutex
		gaveUp := map[string]string{}
		q := startQueue(t, db, func(ctx context.Context, id string) error {
			switch id {
			case "panics":
				panic("a bug")
			case "slow":
				<-ctx.Done()
				return ctx.Err()
			}
			return errors.New("still failing")
		}, qopts{MaxAttempts: 1, JobTimeout: 200 * time.Millisecond, GiveUp: func(_ context.Context, id string, err error) {
			mu.Lock()
			gaveUp[id] = err.Error()
			mu.Unlock()
		}})
		for _, id := range []string{"fails", "panics", "slow"} {
			enqueue(t, db, q, id, true)
		}
		waitFor(t, "GiveUp for each job", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(gaveUp) == 3
		})
		if !strings.Contains(gaveUp["panics"], "a bug") {
			t.Errorf("the panic's GiveUp: %q", gaveUp["panics"])
		}
	})
}

// The queue works the most urgent first: with the one worker busy, a job
// of priority 1 enqueued after two of priority 4 is worked before them.
func TestQueuePriorities(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		var mu sync.Mutex
		var order []string
		gate := make(chan struct{})
		q := startQueue(t, db, func(ctx context.Context, id string) error {
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			if id == "gate" {
				<-gate
			}
			return nil
		}, qopts{Workers: 1})
		enqueue(t, db, q, "gate", true)
		waitState(t, db, "gate", "running")
		enqueueAt(t, db, q, "heavy-1", 4, true)
		enqueueAt(t, db, q, "heavy-2", 4, true)
		enqueueAt(t, db, q, "light", 1, true)
		close(gate)
		for _, id := range []string{"light", "heavy-1", "heavy-2"} {
			waitState(t, db, id, "completed")
		}
		mu.Lock()
		defer mu.Unlock()
		if got, want := strings.Join(order, " "), "gate light heavy-1 heavy-2"; got != want {
			t.Errorf("worked %s, want %s", got, want)
		}
	})
}

// otherArgs are a second job kind, in a queue of its own.
type otherArgs struct {
	N int `json:"n"`
}

func (otherArgs) Kind() string                 { return "other" }
func (otherArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: "other"} }

// Two kinds on one Queue, each added by its own AddWorker: each job goes
// to its kind's worker; a kind added twice, or after the first use, is
// an error.
func TestQueueTwoKinds(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		got := make(chan string, 2)
		q, err := newQueue(t, db, func(_ context.Context, id string) error { got <- "test " + id; return nil }, quick(t, qopts{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := store.AddWorker(q, store.Worker[otherArgs]{Queue: "other", Work: func(_ context.Context, job *river.Job[otherArgs]) error {
			got <- fmt.Sprint("other ", job.Args.N)
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		if err := store.AddWorker(q, store.Worker[otherArgs]{Queue: "other", Work: func(context.Context, *river.Job[otherArgs]) error { return nil }}); err == nil {
			t.Error("a kind added twice: no error")
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Stop(context.Background()) })
		if err := store.AddWorker(q, store.Worker[unknownArgs]{Work: func(context.Context, *river.Job[unknownArgs]) error { return nil }}); err == nil {
			t.Error("a worker added after Start: no error")
		}
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := q.EnqueueTx(ctx, tx, testArgs{JobID: "a"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := q.EnqueueTx(ctx, tx, otherArgs{N: 7}, nil); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for range 2 {
			select {
			case s := <-got:
				seen[s] = true
			case <-time.After(10 * time.Second):
				t.Fatalf("worked %v, want both jobs", seen)
			}
		}
		if !seen["test a"] || !seen["other 7"] {
			t.Errorf("worked %v, want test a and other 7", seen)
		}
	})
}

// A job's context carries the values of the context its queue started
// with: the server's logger (api.WithLogger) reaches what workers log.
func TestQueueJobContextCarriesStartsValues(t *testing.T) {
	type key struct{}
	onEachDB(t, func(t *testing.T, db *store.DB) {
		got := make(chan any, 1)
		q, err := newQueue(t, db, func(ctx context.Context, _ string) error {
			got <- ctx.Value(key{})
			return nil
		}, quick(t, qopts{}))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(context.WithValue(context.Background(), key{}, "started so")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = q.Stop(ctx)
		})
		enqueue(t, db, q, "j1", true)
		select {
		case v := <-got:
			if v != "started so" {
				t.Fatalf("the job's context holds %v, want the value Start's had", v)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the job was not worked within 20 s")
		}
	})
}
