package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// quick is o for a test: a short poll, no random delay before River's
// maintenance, River's warnings and errors in the test's log.
func quick(t *testing.T, o store.QueueOptions) store.QueueOptions {
	if o.PollInterval == 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	o.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return store.QuickStart(o)
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
func startQueue(t *testing.T, db *store.DB, work func(context.Context, string) error, o store.QueueOptions) *store.Queue {
	t.Helper()
	q, err := store.NewQueue(db, work, quick(t, o))
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
	enqueueBehind(t, db, q, jobID, 0, commit)
}

// enqueueBehind is enqueue for a job whose user has backlog jobs before it.
func enqueueBehind(t *testing.T, db *store.DB, q *store.Queue, jobID string, backlog int, commit bool) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := q.EnqueueTx(ctx, tx, jobID, backlog); err != nil {
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
		}, store.QueueOptions{MaxAttempts: 5})
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
		if err := q.EnqueueTx(ctx, nil, "", 0); err == nil {
			t.Error("EnqueueTx with an empty job id: no error")
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
			}, store.QueueOptions{Workers: 2}))
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
		dead, err := store.NewQueue(db, func(context.Context, string) error { return nil }, quick(t, store.QueueOptions{}))
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
		opts := quick(t, store.QueueOptions{JobTimeout: 500 * time.Millisecond, RescueAfter: time.Second})
		rescuer, err := store.NewQueue(db, work, opts)
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
		q, err := store.NewQueue(db, func(ctx context.Context, id string) error {
			started <- id
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				cancelled.Store(true)
				return fmt.Errorf("ingest %s: %w", id, ctx.Err())
			}
		}, quick(t, store.QueueOptions{}))
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
		}, store.QueueOptions{MaxAttempts: 1, JobTimeout: 200 * time.Millisecond, GiveUp: func(_ context.Context, id string, err error) {
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

// A job's priority follows its user's backlog, and the queue works the
// most urgent first: with the one worker busy, a light user's job
// enqueued after a heavy user's two is worked before them.
func TestQueuePriorities(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		for backlog, want := range []int{1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4} {
			if got := store.Priority(backlog); got != want {
				t.Errorf("Priority(%d) = %d, want %d", backlog, got, want)
			}
		}
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
		}, store.QueueOptions{Workers: 1})
		enqueue(t, db, q, "gate", true)
		waitState(t, db, "gate", "running")
		enqueueBehind(t, db, q, "heavy-1", 20, true)
		enqueueBehind(t, db, q, "heavy-2", 21, true)
		enqueueBehind(t, db, q, "light", 0, true)
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

// A job asks Yield between its chunks: no while it is alone, no when its
// own user's more urgent job waits, yes once another user's is available;
// it then returns ErrYield, the urgent jobs get the worker, and the job is
// worked again. Its yield is not an attempt: with MaxAttempts 1 it still
// completes, and GiveUp is never told. Yield is no for a job of priority
// 1 and outside a job.
func TestQueueYields(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		// brain's side of the jobs: long and own are u1's, urgent u2's.
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		mustUser(t, store.NewAuthStore(db), "u2", "bob")
		if _, err := db.ExecContext(context.Background(), `INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, created_at)
			VALUES ('long', 'u1', 'k1', 'p', 'queued', 1, 0), ('own', 'u1', 'k2', 'p', 'queued', 1, 0), ('urgent', 'u2', 'k3', 'p', 'queued', 1, 0)`); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		var answers []bool // Yield's, in the long job's runs
		var q *store.Queue
		gaveUp := atomic.Bool{}
		chunks := atomic.Int32{}
		q = startQueue(t, db, func(ctx context.Context, id string) error {
			mu.Lock()
			order = append(order, id)
			runs := strings.Count(strings.Join(order, " "), id)
			mu.Unlock()
			switch {
			case id == "urgent":
				if q.Yield(ctx) {
					t.Error("Yield says yes to the most urgent job")
				}
				return nil
			case id == "own":
				return nil
			case runs > 1: // the long job again: a few more chunks, then done
				for range 3 {
					if q.Yield(ctx) {
						t.Error("Yield says yes with nothing waiting")
					}
				}
				return nil
			}
			for range 1000 { // the long job's first run: chunks until told to yield
				chunks.Add(1)
				time.Sleep(10 * time.Millisecond)
				yield := q.Yield(ctx)
				mu.Lock()
				answers = append(answers, yield)
				mu.Unlock()
				if yield {
					return fmt.Errorf("job %s: a more urgent one waits: %w", id, store.ErrYield)
				}
			}
			return errors.New("never told to yield")
		}, store.QueueOptions{Workers: 1, MaxAttempts: 1, GiveUp: func(context.Context, string, error) { gaveUp.Store(true) }})
		enqueueBehind(t, db, q, "long", 20, true)
		waitFor(t, "the long job to work a few chunks", func() bool { return chunks.Load() >= 3 })
		enqueueBehind(t, db, q, "own", 1, true)
		at := chunks.Load()
		waitFor(t, "the long job to work a few chunks more", func() bool { return chunks.Load() >= at+3 })
		enqueue(t, db, q, "urgent", true)
		for _, id := range []string{"urgent", "own"} {
			waitState(t, db, id, "completed")
		}
		j := waitState(t, db, "long", "completed")
		mu.Lock()
		defer mu.Unlock()
		if got, want := strings.Join(order, " "), "long urgent own long"; got != want {
			t.Errorf("worked %s, want %s", got, want)
		}
		if len(answers) < 5 || slices.Contains(answers[:len(answers)-1], true) || !answers[len(answers)-1] {
			t.Errorf("Yield answered %v: want no while the job was alone or its user's waited, then yes", answers)
		}
		if j.attempt != 1 || gaveUp.Load() {
			t.Errorf("long: %+v, GiveUp told: %v; want completed at attempt 1, GiveUp never told", j, gaveUp.Load())
		}
		if q.Yield(context.Background()) {
			t.Error("Yield outside a job says yes")
		}
	})
}

// Ties: a light user's job (priority 2) yields to another light user's
// job of its priority that has not started, and a heavy user's (priority
// 4) does not yield to another heavy user's.
func TestQueueYieldsOnLightTies(t *testing.T) {
	onEachDB(t, func(t *testing.T, db *store.DB) {
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		mustUser(t, store.NewAuthStore(db), "u2", "bob")
		if _, err := db.ExecContext(context.Background(), `INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, created_at)
			VALUES ('a2', 'u1', 'k1', 'p', 'queued', 1, 0), ('b2', 'u2', 'k2', 'p', 'queued', 1, 0),
			('a4', 'u1', 'k3', 'p', 'queued', 1, 0), ('b4', 'u2', 'k4', 'p', 'queued', 1, 0)`); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		var q *store.Queue
		started := make(chan string, 8)
		proceed := make(chan bool)
		q = startQueue(t, db, func(ctx context.Context, id string) error {
			mu.Lock()
			order = append(order, id)
			first := strings.Count(strings.Join(order, " "), id) == 1
			mu.Unlock()
			if !first || (id != "a2" && id != "a4") {
				return nil
			}
			started <- id
			<-proceed // the other user's job is enqueued now
			if q.Yield(ctx) {
				return fmt.Errorf("%w", store.ErrYield)
			}
			return nil
		}, store.QueueOptions{Workers: 1})
		for _, c := range []struct {
			mine, theirs string
			backlog      int
			want         string
		}{
			{"a2", "b2", 1, "a2 b2 a2"}, // yields
			{"a4", "b4", 20, "a4 b4"},   // does not
		} {
			mu.Lock()
			order = nil
			mu.Unlock()
			enqueueBehind(t, db, q, c.mine, c.backlog, true)
			<-started
			enqueueBehind(t, db, q, c.theirs, c.backlog, true)
			proceed <- true
			waitState(t, db, c.mine, "completed")
			waitState(t, db, c.theirs, "completed")
			mu.Lock()
			if got := strings.Join(order, " "); got != c.want {
				t.Errorf("%s beside %s: worked %s, want %s", c.mine, c.theirs, got, c.want)
			}
			mu.Unlock()
		}
	})
}
