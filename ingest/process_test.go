package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// batchOf returns a body of n items in project, each text numbered.
func batchOf(project string, n int) string {
	its := make([]string, n)
	for i := range its {
		its[i] = fmt.Sprintf(`{"text":"note number %d of %s","skill":"s%d"}`, i, project, i%2)
	}
	return `{"project":"` + project + `","items":[` + strings.Join(its, ",") + `]}`
}

// itemsIn returns how many items the user has in project.
func (e *env) itemsIn(t *testing.T, user, project string) int {
	t.Helper()
	ps, err := e.svc.Projects(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == project {
			return p.Items
		}
	}
	return 0
}

func (e *env) job(t *testing.T, user, id string) ingest.Job {
	t.Helper()
	j, err := e.svc.Job(context.Background(), user, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestProcess(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		a := e.ingest(t, "alice", batchOf("big", 250))
		e.events.take()
		e.clock.Advance(time.Minute)
		e.process(t, a.JobID)

		j := e.job(t, "alice", a.JobID)
		if j.Status != ingest.StatusSucceeded || j.ItemsDone != 250 || j.ItemsTotal != 250 || j.Error != "" ||
			!j.StartedAt.Equal(t0.Add(time.Minute)) || !j.FinishedAt.Equal(t0.Add(time.Minute)) || !j.CreatedAt.Equal(t0) {
			t.Fatalf("job = %+v, want succeeded with 250 items done", j)
		}
		if got, want := types(e.events.take()), "job.progress job.progress job.progress job.succeeded memory.ingested"; got != want {
			t.Fatalf("events: %s, want %s", got, want)
		}
		if n := e.itemsIn(t, "alice", "big"); n != 250 {
			t.Fatalf("%d items stored, want 250", n)
		}

		// Again: nothing to do, nothing stored twice, nothing published.
		e.process(t, a.JobID)
		if n := e.itemsIn(t, "alice", "big"); n != 250 {
			t.Fatalf("after a second Process: %d items, want 250", n)
		}
		if evs := e.events.take(); len(evs) != 0 {
			t.Fatalf("a second Process published %s", types(evs))
		}

		// A replay of the batch is the same, succeeded, job.
		if r := e.ingest(t, "alice", batchOf("big", 250)); !r.Replayed || r.JobID != a.JobID || r.Status != ingest.StatusSucceeded {
			t.Fatalf("replay after processing: %+v", r)
		}
	})
}

// failingStore fails StoreItems at its call number failAt with a store
// error, and runs before before each call.
type failingStore struct {
	ingest.Store
	calls, failAt int
	before        func()
	batch         []byte // StartJob returns it instead of the stored batch, if set
}

func (f *failingStore) StoreItems(ctx context.Context, id string, items []ingest.StoredItem, done int, now time.Time) (bool, error) {
	f.calls++
	if f.before != nil {
		f.before()
	}
	if f.calls == f.failAt {
		return false, errors.New("store: connection reset")
	}
	return f.Store.StoreItems(ctx, id, items, done, now)
}

func (f *failingStore) StartJob(ctx context.Context, id string, now time.Time) (ingest.Job, []byte, error) {
	j, b, err := f.Store.StartJob(ctx, id, now)
	if f.batch != nil && b != nil {
		b = f.batch
	}
	return j, b, err
}

func TestProcessResumes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		f := &failingStore{failAt: 2}
		e := newEnv(t, db, func(s ingest.Store) ingest.Store { f.Store = s; return f })
		a := e.ingest(t, "alice", batchOf("resume", 250))
		e.events.take()

		err := e.svc.Process(context.Background(), a.JobID)
		if !errors.Is(err, ingest.ErrUnavailable) || errors.Is(err, ingest.ErrPermanent) {
			t.Fatalf("Process with a store failing = %v, want ErrUnavailable, not permanent", err)
		}
		if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusRunning || j.ItemsDone != 100 {
			t.Fatalf("after the failure: job %+v, want running with 100 done", j)
		}
		if n := e.itemsIn(t, "alice", "resume"); n != 100 {
			t.Fatalf("after the failure: %d items, want the first chunk's 100", n)
		}
		e.process(t, a.JobID)
		if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusSucceeded || j.ItemsDone != 250 {
			t.Fatalf("after the retry: job %+v, want succeeded", j)
		}
		if n := e.itemsIn(t, "alice", "resume"); n != 250 {
			t.Fatalf("after the retry: %d items, want 250", n)
		}
		if got, want := types(e.events.take()), "job.progress job.progress job.progress job.succeeded memory.ingested"; got != want {
			t.Fatalf("events: %s, want %s", got, want)
		}
	})
}

func TestProcessFails(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := &failingStore{}
		e := newEnv(t, db, func(s ingest.Store) ingest.Store { f.Store = s; return f })
		for name, batch := range map[string]string{
			"not JSON":        `{"v":1,"items":[`,
			"another version": `{"v":2,"items":[{"text":"x","kind":"note"}]}`,
			"too few items":   `{"v":1,"items":[]}`,
			"an empty text":   `{"v":1,"items":[{"text":" ","kind":"note"}]}`,
		} {
			t.Run(name, func(t *testing.T) {
				f.batch = []byte(batch)
				defer func() { f.batch = nil }()
				a := e.ingest(t, "alice", `{"project":"p","items":[{"text":"`+name+`"}]}`)
				e.events.take()
				err := e.svc.Process(ctx, a.JobID)
				if !errors.Is(err, ingest.ErrPermanent) {
					t.Fatalf("Process = %v, want ErrPermanent", err)
				}
				j := e.job(t, "alice", a.JobID)
				if j.Status != ingest.StatusFailed || j.Error == "" || j.FinishedAt.IsZero() {
					t.Fatalf("job = %+v, want failed with a message", j)
				}
				evs := e.events.take()
				if len(evs) != 1 || evs[0].data != (ingest.JobFailed{JobID: a.JobID, Error: j.Error}) {
					t.Fatalf("events = %+v, want one job.failed", evs)
				}
				if err := e.svc.Process(ctx, a.JobID); err != nil {
					t.Fatalf("Process of a failed job = %v, want nil", err)
				}
			})
		}

		t.Run("NoSuchJob", func(t *testing.T) {
			if err := e.svc.Process(ctx, "0b6f4c3e-5a47-4c2f-9d1e-3f0e8a5b7c21"); !errors.Is(err, ingest.ErrPermanent) {
				t.Fatalf("Process of no job = %v, want ErrPermanent", err)
			}
		})

		t.Run("QueueGivesUp", func(t *testing.T) {
			a := e.ingest(t, "alice", `{"project":"given-up","items":[{"text":"x"}]}`)
			e.events.take()
			if err := e.svc.Fail(ctx, a.JobID, "gave up after 25 attempts"); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Fail(ctx, a.JobID, "again"); err != nil {
				t.Fatal(err)
			}
			if got := types(e.events.take()); got != "job.failed" {
				t.Fatalf("events: %s, want one job.failed", got)
			}
			e.process(t, a.JobID)
			if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusFailed || j.Error != "gave up after 25 attempts" || j.ItemsDone != 0 {
				t.Fatalf("job = %+v, want failed as first told", j)
			}
			if n := e.itemsIn(t, "alice", "given-up"); n != 0 {
				t.Fatalf("a failed job stored %d items", n)
			}
		})

		t.Run("FailedWhileRunning", func(t *testing.T) {
			a := e.ingest(t, "alice", batchOf("cancelled", 150))
			f.calls = 0
			f.before = func() {
				if f.calls == 2 {
					if err := e.svc.Fail(ctx, a.JobID, "cancelled"); err != nil {
						t.Fatal(err)
					}
				}
			}
			defer func() { f.before = nil }()
			e.process(t, a.JobID)
			if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusFailed || j.ItemsDone != 100 {
				t.Fatalf("job = %+v, want failed with its first chunk done", j)
			}
			if n := e.itemsIn(t, "alice", "cancelled"); n != 100 {
				t.Fatalf("%d items stored, want the 100 stored before it failed", n)
			}
		})
	})
}

// Process asks Config.Yield after each chunk that leaves items to store,
// and when told to, returns ErrYield with its items so far stored and the
// job still running; the next run goes on from there. Here the queue says
// yes at the second question: the first run stores two chunks of 100, the
// second the last 50, asking nothing.
func TestProcessYields(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		asked := 0
		svc := ingest.NewService(e.store, ingest.Config{Now: e.clock.Now, Yield: func(context.Context) bool {
			asked++
			return asked == 2
		}})
		a := e.ingest(t, "alice", batchOf("yields", 250))
		err := svc.Process(context.Background(), a.JobID)
		if !errors.Is(err, ingest.ErrYield) || errors.Is(err, ingest.ErrUnavailable) || errors.Is(err, ingest.ErrPermanent) {
			t.Fatalf("the first run = %v, want ErrYield alone", err)
		}
		if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusRunning || j.ItemsDone != 200 {
			t.Fatalf("after the first run: job %+v, want running with 200 done", j)
		}
		if err := svc.Process(context.Background(), a.JobID); err != nil {
			t.Fatalf("the second run = %v", err)
		}
		if j := e.job(t, "alice", a.JobID); j.Status != ingest.StatusSucceeded || j.ItemsDone != 250 || asked != 2 {
			t.Fatalf("after the second run: job %+v, Yield asked %d times; want succeeded, asked twice", j, asked)
		}
		if n := e.itemsIn(t, "alice", "yields"); n != 250 {
			t.Fatalf("%d items stored, want 250", n)
		}
	})
}

// TestJobNeverRunningWithEveryItemStored reads the job as a client may
// (GET /api/v1/jobs/{id}) after each of Process's writes: once every item
// is stored, it has succeeded. Before, the last chunk and the job's end
// were two transactions, and a read between them found the job running
// with items_done equal to items_total.
func TestJobNeverRunningWithEveryItemStored(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		var seen []ingest.Job
		peek := &peekingStore{}
		e := newEnv(t, db, func(s ingest.Store) ingest.Store { peek.Store = s; return peek })
		a := e.ingest(t, "alice", batchOf("big", 150))
		peek.after = func(id string) { seen = append(seen, e.job(t, "alice", id)) }
		e.process(t, a.JobID)
		if len(seen) != 2 {
			t.Fatalf("%d reads, want one after each of two chunks", len(seen))
		}
		for _, j := range seen {
			if j.ItemsDone == j.ItemsTotal && j.Status != ingest.StatusSucceeded {
				t.Fatalf("read after a chunk: %s with %d of %d items done; want succeeded once all are", j.Status, j.ItemsDone, j.ItemsTotal)
			}
		}
		if seen[0].Status != ingest.StatusRunning || seen[1].Status != ingest.StatusSucceeded {
			t.Fatalf("reads: %+v", seen)
		}
	})
}

// peekingStore calls after once each StoreItems has returned.
type peekingStore struct {
	ingest.Store
	after func(id string)
}

func (p *peekingStore) StoreItems(ctx context.Context, id string, items []ingest.StoredItem, done int, now time.Time) (bool, error) {
	finished, err := p.Store.StoreItems(ctx, id, items, done, now)
	if p.after != nil {
		p.after(id)
	}
	return finished, err
}
