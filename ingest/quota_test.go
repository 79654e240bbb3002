package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// usage is a user's row of user_usage: items held and jobs not final.
func usage(t *testing.T, db *store.DB, user string) (items, jobs int) {
	t.Helper()
	err := db.QueryRowContext(context.Background(), "SELECT items, jobs FROM user_usage WHERE user_id = $1", user).Scan(&items, &jobs)
	if err != nil {
		t.Fatalf("the usage of %s: %v", user, err)
	}
	return items, jobs
}

// batch is an acceptance of n items under key, with the quotas given.
func batch(user, key string, n, maxItems, maxJobs int) ingest.Acceptance {
	a := acceptance(user, key, "j-"+user+"-"+key)
	a.ItemsTotal, a.MaxItems, a.MaxJobs = n, maxItems, maxJobs
	return a
}

// storeAll runs job id as a worker would: every one of its n items
// stored, then final with status.
func storeAll(t *testing.T, s *ingest.SQLStore, user, id string, n int, status ingest.Status) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.StartJob(ctx, id, t0); err != nil {
		t.Fatal(err)
	}
	items := make([]ingest.StoredItem, n)
	for i := range items {
		items[i] = ingest.StoredItem{ID: fmt.Sprintf("%s-%d", id, i), UserID: user, JobID: id, Seq: i, Project: "p",
			Item: ingest.Item{Text: "note", Kind: "note"}, CreatedAt: t0}
	}
	if finished, err := s.StoreItems(ctx, id, items, n, t0); err != nil || finished != (status == ingest.StatusSucceeded) {
		t.Fatalf("StoreItems(%s) = %v, %v", id, finished, err)
	}
	if status == ingest.StatusSucceeded {
		return // storing the last items ended it
	}
	if _, finished, err := s.FinishJob(ctx, id, status, "", t0); err != nil || !finished {
		t.Fatalf("FinishJob(%s) = %v, %v", id, finished, err)
	}
}

// TestQuotas: Accept takes a batch's items and a job from its user's
// quotas or refuses it, changing nothing; a replay takes nothing; a job
// ending gives its slot back, a failed one the items it never stored;
// a deleted item gives itself back. Accept tells the queue the user's
// backlog.
func TestQuotas(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		mustUser(t, store.NewAuthStore(db), "u2", "bob")
		var backlogs []int
		s := ingest.NewSQLStore(db, func(_ context.Context, _ *store.Tx, _ string, backlog int) error {
			backlogs = append(backlogs, backlog)
			return nil
		})
		accept := func(a ingest.Acceptance) error {
			t.Helper()
			_, replayed, err := s.Accept(ctx, a)
			if replayed {
				t.Fatalf("Accept(%s) replayed", a.IngestID)
			}
			return err
		}
		wantQuota := func(err error, want ingest.QuotaError) {
			t.Helper()
			var qe *ingest.QuotaError
			if !errors.As(err, &qe) || *qe != want {
				t.Fatalf("Accept = %v, want %+v", err, want)
			}
		}

		// Items: 2 and 3 fill a quota of 5; 1 more is refused, and the
		// refused batch leaves nothing behind.
		for _, a := range []ingest.Acceptance{batch("u1", "a", 2, 5, 10), batch("u1", "b", 3, 5, 10)} {
			if err := accept(a); err != nil {
				t.Fatal(err)
			}
		}
		wantQuota(accept(batch("u1", "c", 1, 5, 10)), ingest.QuotaError{Quota: ingest.QuotaItems, Limit: 5, Used: 5, Asked: 1})
		if items, jobs := usage(t, db, "u1"); items != 5 || jobs != 2 {
			t.Fatalf("u1 holds %d items and %d jobs, want 5 and 2", items, jobs)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM jobs WHERE user_id = 'u1'") + count(t, db, "SELECT COUNT(*) FROM ingest_keys WHERE user_id = 'u1'"); n != 4 {
			t.Fatalf("the refused batch left rows: %d jobs and keys, want 4", n)
		}
		// A batch larger than the whole quota, from a user who holds
		// nothing, is refused too.
		wantQuota(accept(batch("u2", "big", 6, 5, 10)), ingest.QuotaError{Quota: ingest.QuotaItems, Limit: 5, Used: 0, Asked: 6})

		// A replay over the quota answers its job, and takes nothing.
		if _, replayed, err := s.Accept(ctx, batch("u1", "a", 2, 5, 10)); err != nil || !replayed {
			t.Fatalf("a replay over the quota = %v, %v; want replayed", replayed, err)
		}
		if items, jobs := usage(t, db, "u1"); items != 5 || jobs != 2 {
			t.Fatalf("after a replay u1 holds %d items and %d jobs, want 5 and 2", items, jobs)
		}

		// Job a succeeds (its 2 items stay counted); job b fails before
		// storing any: its 3 items come back.
		storeAll(t, s, "u1", "j-u1-a", 2, ingest.StatusSucceeded)
		if _, _, err := s.FinishJob(ctx, "j-u1-b", ingest.StatusFailed, "broken", t0); err != nil {
			t.Fatal(err)
		}
		if items, jobs := usage(t, db, "u1"); items != 2 || jobs != 0 {
			t.Fatalf("after the jobs ended u1 holds %d items and %d jobs, want 2 and 0", items, jobs)
		}
		// Finishing a final job again gives nothing back twice.
		if _, finished, err := s.FinishJob(ctx, "j-u1-b", ingest.StatusFailed, "again", t0); err != nil || finished {
			t.Fatalf("FinishJob of a final job = %v, %v", finished, err)
		}
		if items, jobs := usage(t, db, "u1"); items != 2 || jobs != 0 {
			t.Fatalf("after a second FinishJob u1 holds %d items and %d jobs, want 2 and 0", items, jobs)
		}
		// A deleted item gives itself back.
		if err := s.DeleteItem(ctx, "u1", "j-u1-a-0"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteItem(ctx, "u1", "j-u1-a-0"); !errors.Is(err, ingest.ErrNotFound) {
			t.Fatalf("deleting it again = %v, want ErrNotFound", err)
		}
		if items, _ := usage(t, db, "u1"); items != 1 {
			t.Fatalf("after a delete u1 holds %d items, want 1", items)
		}

		// Jobs: a quota of 2 jobs not final; a job ending frees a slot.
		backlogs = nil
		for _, key := range []string{"d", "e"} {
			if err := accept(batch("u1", key, 1, 5, 2)); err != nil {
				t.Fatal(err)
			}
		}
		wantQuota(accept(batch("u1", "f", 1, 5, 2)), ingest.QuotaError{Quota: ingest.QuotaJobs, Limit: 2, Used: 2, Asked: 1})
		storeAll(t, s, "u1", "j-u1-d", 1, ingest.StatusSucceeded)
		if err := accept(batch("u1", "f", 1, 5, 2)); err != nil {
			t.Fatalf("after a job ended: %v", err)
		}
		// The refused batch was enqueued too, with the backlog of 2, in
		// the transaction its refusal rolled back.
		if !slices.Equal(backlogs, []int{0, 1, 2, 1}) {
			t.Fatalf("the queue was told backlogs %v, want [0 1 2 1]", backlogs)
		}
		// u2 is not u1: a fresh user's first batch has no backlog.
		if err := accept(batch("u2", "small", 5, 5, 2)); err != nil || backlogs[len(backlogs)-1] != 0 {
			t.Fatalf("u2's first batch = %v, backlog %v", err, backlogs)
		}
		// Zero quotas are none.
		if err := accept(batch("u2", "more", 1000, 0, 0)); err != nil {
			t.Fatalf("with no quotas: %v", err)
		}
	})
}

// TestQuotaUnderConcurrency: many Accepts of one user at once take it to
// its quota of items exactly, never past it.
func TestQuotaUnderConcurrency(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		s := ingest.NewSQLStore(db, nil)
		const n, maxItems, each = 24, 10, 3 // room for 3 batches of 3
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, _, err := s.Accept(ctx, batch("u1", fmt.Sprint(i), each, maxItems, 0))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		accepted := 0
		for err := range errs {
			var qe *ingest.QuotaError
			switch {
			case err == nil:
				accepted++
			case !errors.As(err, &qe) || qe.Quota != ingest.QuotaItems:
				t.Fatalf("Accept = %v, want nil or an items QuotaError", err)
			}
		}
		if items, jobs := usage(t, db, "u1"); accepted != 3 || items != 9 || jobs != 3 {
			t.Fatalf("%d batches accepted, holding %d items and %d jobs; want 3, 9, 3", accepted, items, jobs)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM jobs"); n != 3 {
			t.Fatalf("%d jobs, want 3", n)
		}
	})
}

// openBefore opens a new database of dialect d, closed when the test
// ends, with the platform's migrations and the example's before the one
// named name applied.
func openBefore(t *testing.T, d store.Dialect, name string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.URL(t, d), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateBefore(ctx, "ingest", name, ingest.Migrations); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestQuotaMigration: the migration that adds the usage rows counts what
// the tables hold: items stored, the items not yet stored of jobs not
// final, and those jobs.
func TestQuotaMigration(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := openBefore(t, d, "quotas")
			exec := func(q string) {
				t.Helper()
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec("INSERT INTO users (id, username, password_hash, created_at) VALUES ('u1', 'ada', 'x', 0), ('u2', 'bob', 'x', 0), ('u3', 'cy', 'x', 0)")
			// u1: a job done with 3 items, one running with 2 of 5 stored,
			// one queued with 4; u2: one failed job that stored 1; u3: nothing.
			exec(`INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, items_done, created_at) VALUES
				('j1', 'u1', 'k1', 'p', 'succeeded', 3, 3, 0), ('j2', 'u1', 'k2', 'p', 'running', 5, 2, 0),
				('j3', 'u1', 'k3', 'p', 'queued', 4, 0, 0), ('j4', 'u2', 'k4', 'p', 'failed', 6, 1, 0)`)
			exec(`INSERT INTO items (id, user_id, job_id, seq, project, text, kind, occurred_at, created_at) VALUES
				('i1', 'u1', 'j1', 0, 'p', 't', 'note', 0, 0), ('i2', 'u1', 'j1', 1, 'p', 't', 'note', 0, 0),
				('i3', 'u1', 'j1', 2, 'p', 't', 'note', 0, 0), ('i4', 'u1', 'j2', 0, 'p', 't', 'note', 0, 0),
				('i5', 'u1', 'j2', 1, 'p', 't', 'note', 0, 0), ('i6', 'u2', 'j4', 0, 'p', 't', 'note', 0, 0)`)
			if _, err := db.Migrate(ctx, ingest.Migrations); err != nil {
				t.Fatal(err)
			}
			if items, jobs := usage(t, db, "u1"); items != 3+5+4 || jobs != 2 {
				t.Fatalf("u1 holds %d items and %d jobs, want 12 and 2", items, jobs)
			}
			if items, jobs := usage(t, db, "u2"); items != 1 || jobs != 0 {
				t.Fatalf("u2 holds %d items and %d jobs, want 1 and 0", items, jobs)
			}
			// u3 has no row, and holds nothing: its first batch makes one.
			s := ingest.NewSQLStore(db, nil)
			if _, _, err := s.Accept(ctx, batch("u3", "k", 2, 2, 1)); err != nil {
				t.Fatal(err)
			}
			if items, jobs := usage(t, db, "u3"); items != 2 || jobs != 1 {
				t.Fatalf("u3 holds %d items and %d jobs, want 2 and 1", items, jobs)
			}
			// u1's quota counts what the migration found.
			var qe *ingest.QuotaError
			if _, _, err := s.Accept(ctx, batch("u1", "k9", 1, 12, 0)); !errors.As(err, &qe) || qe.Used != 12 {
				t.Fatalf("u1 at 12 of 12 items: %v, want a QuotaError", err)
			}
		})
	}
}
