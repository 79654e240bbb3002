package ingest_test

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

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// A job's priority follows its user's backlog.
func TestPriority(t *testing.T) {
	for backlog, want := range []int{1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4} {
		if got := ingest.Priority(backlog); got != want {
			t.Errorf("Priority(%d) = %d, want %d", backlog, got, want)
		}
	}
}

// onEachDB runs f on a fresh database of each dialect, in parallel.
func onEachDB(t *testing.T, f func(t *testing.T, db *store.DB)) {
	t.Parallel()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, storetest.Open(t, d))
		})
	}
}

// startJobs starts a store.Queue on db whose one worker of ingest jobs
// calls work with each job's id (one attempt each), stopped when the test
// ends.
func startJobs(t *testing.T, db *store.DB, work func(context.Context, string) error, giveUp func(context.Context, string, error)) *ingest.JobQueue {
	t.Helper()
	q, err := store.NewQueue(db, store.QueueOptions{MaxAttempts: 1, PollInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := ingest.NewJobQueue(db, q, 1, work, giveUp)
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
	return jobs
}

// enqueueBehind enqueues jobID, of a user with backlog jobs before it, in
// a transaction it commits.
func enqueueBehind(t *testing.T, db *store.DB, q *ingest.JobQueue, jobID string, backlog int) {
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
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// riverJob is what River keeps of a job.
type riverJob struct {
	state   string
	attempt int
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
	q := `SELECT state::text, attempt FROM river_job WHERE args->>'job_id' = $1`
	if db.Dialect == store.SQLite {
		q = `SELECT state, attempt FROM river_job WHERE json_extract(args, '$.job_id') = $1`
	}
	var j riverJob
	waitFor(t, fmt.Sprintf("job %s to be %s", jobID, state), func() bool {
		err := db.QueryRowContext(context.Background(), q, jobID).Scan(&j.state, &j.attempt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		return j.state == state
	})
	return j
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
		var q *ingest.JobQueue
		gaveUp := atomic.Bool{}
		chunks := atomic.Int32{}
		q = startJobs(t, db, func(ctx context.Context, id string) error {
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
		}, func(context.Context, string, error) { gaveUp.Store(true) })
		enqueueBehind(t, db, q, "long", 20)
		waitFor(t, "the long job to work a few chunks", func() bool { return chunks.Load() >= 3 })
		enqueueBehind(t, db, q, "own", 1)
		at := chunks.Load()
		waitFor(t, "the long job to work a few chunks more", func() bool { return chunks.Load() >= at+3 })
		enqueueBehind(t, db, q, "urgent", 0)
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
		var q *ingest.JobQueue
		started := make(chan string, 8)
		proceed := make(chan bool)
		q = startJobs(t, db, func(ctx context.Context, id string) error {
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
		}, nil)
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
			enqueueBehind(t, db, q, c.mine, c.backlog)
			<-started
			enqueueBehind(t, db, q, c.theirs, c.backlog)
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
