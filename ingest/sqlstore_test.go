package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

func acceptance(user, key, jobID string) ingest.Acceptance {
	return ingest.Acceptance{UserID: user, IngestID: key, Fingerprint: "f-" + key, JobID: jobID, Project: "p", ItemsTotal: 2,
		Batch: `{"v":1}`, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
}

func count(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAcceptIsOneTransaction: when the enqueue fails, neither the key
// nor the job is left behind, and the request may be made again.
func TestAcceptIsOneTransaction(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		fail := true
		var enqueued []string
		s := ingest.NewSQLStore(db, func(ctx context.Context, tx *store.Tx, jobID string, _ int) error {
			if fail {
				return errors.New("queue: full")
			}
			enqueued = append(enqueued, jobID)
			return nil
		})
		if _, _, err := s.Accept(ctx, acceptance("u1", "k1", "j1")); err == nil || !strings.Contains(err.Error(), "queue: full") {
			t.Fatalf("Accept with a failing enqueue = %v, want its error", err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM jobs") + count(t, db, "SELECT COUNT(*) FROM ingest_keys"); n != 0 {
			t.Fatalf("a failed Accept left %d rows", n)
		}
		fail = false
		job, replayed, err := s.Accept(ctx, acceptance("u1", "k1", "j2"))
		if err != nil || replayed || job.ID != "j2" || job.Status != ingest.StatusQueued || len(enqueued) != 1 {
			t.Fatalf("Accept again = %+v, %v, %v (enqueued %v); want the new job j2", job, replayed, err, enqueued)
		}
		got, err := s.Job(ctx, "u1", "j2")
		if err != nil || got != job {
			t.Fatalf("Job = %+v, %v; want %+v", got, err, job)
		}
		// A nil enqueue enqueues nothing, and the rest still happens.
		if _, replayed, err := ingest.NewSQLStore(db, nil).Accept(ctx, acceptance("u1", "k2", "j3")); err != nil || replayed {
			t.Fatalf("Accept with no queue = %v, %v", replayed, err)
		}
	})
}

// TestReplay: a key is looked up as Accept would, without writing.
func TestReplay(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		mustUser(t, store.NewAuthStore(db), "u2", "bob")
		s := ingest.NewSQLStore(db, nil)
		a := acceptance("u1", "k1", "j1")
		if _, replayed, err := s.Replay(ctx, "u1", "k1", a.Fingerprint, t0); err != nil || replayed {
			t.Fatalf("Replay of a new key = %v, %v; want neither", replayed, err)
		}
		job, _, err := s.Accept(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name              string
			user, fingerprint string
			at                time.Time
			replayed          bool
			err               error
		}{
			{"the same content", "u1", a.Fingerprint, t0.Add(time.Hour - time.Millisecond), true, nil},
			{"other content", "u1", "f-other", t0, false, ingest.ErrKeyReused},
			{"at its expiry", "u1", a.Fingerprint, t0.Add(time.Hour), false, nil},
			{"another user", "u2", a.Fingerprint, t0, false, nil},
		} {
			got, replayed, err := s.Replay(ctx, c.user, "k1", c.fingerprint, c.at)
			if replayed != c.replayed || !errors.Is(err, c.err) || (c.replayed && got != job) {
				t.Errorf("%s: Replay = %+v, %v, %v; want replayed %v, err %v", c.name, got, replayed, err, c.replayed, c.err)
			}
		}
	})
}

// TestStoreItemsOnce: the same items stored twice (new ids, as a second
// run of a job makes) are stored once.
func TestStoreItemsOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		s := ingest.NewSQLStore(db, nil)
		if _, _, err := s.Accept(ctx, acceptance("u1", "k1", "j1")); err != nil {
			t.Fatal(err)
		}
		items := func(prefix string) []ingest.StoredItem {
			return []ingest.StoredItem{
				{ID: prefix + "-0", UserID: "u1", JobID: "j1", Seq: 0, Project: "p", Item: ingest.Item{Text: "alpha", Kind: "note", Tags: []string{"t"}, OccurredAt: t0}, CreatedAt: t0},
				{ID: prefix + "-1", UserID: "u1", JobID: "j1", Seq: 1, Project: "p", Item: ingest.Item{Text: "beta", Kind: "note", OccurredAt: t0}, CreatedAt: t0},
			}
		}
		if _, err := s.StoreItems(ctx, "j1", items("a"), 2, t0); !errors.Is(err, ingest.ErrNotFound) {
			t.Fatalf("StoreItems on a queued job = %v, want ErrNotFound", err)
		}
		if _, _, err := s.StartJob(ctx, "j1", t0); err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"a", "b"} { // the first of two items, twice
			if finished, err := s.StoreItems(ctx, "j1", items(prefix)[:1], 1, t0); err != nil || finished {
				t.Fatalf("StoreItems(1 of 2) = %v, %v", finished, err)
			}
		}
		if n := count(t, db, "SELECT COUNT(*) FROM items"); n != 1 {
			t.Fatalf("%d items after storing the same one twice", n)
		}
		if _, err := s.StoreItems(ctx, "j1", nil, 0, t0); err != nil { // an older count does not move ItemsDone back
			t.Fatal(err)
		}
		if j, _ := s.Job(ctx, "u1", "j1"); j.ItemsDone != 1 {
			t.Fatalf("ItemsDone = %d, want 1", j.ItemsDone)
		}
		if finished, err := s.StoreItems(ctx, "j1", items("c"), 2, t0); err != nil || !finished {
			t.Fatalf("StoreItems(the rest) = %v, %v", finished, err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM items"); n != 2 {
			t.Fatalf("%d items after storing the first again with the second", n)
		}
		rs, err := s.Search(ctx, "u1", ingest.Search{Words: []string{"alpha"}, Limit: 10})
		if err != nil || len(rs) != 1 || rs[0].ID != "a-0" {
			t.Fatalf("Search(alpha) = %+v, %v; want the first stored", rs, err)
		}
		if _, err := s.StoreItems(ctx, "j1", items("d"), 2, t0); !errors.Is(err, ingest.ErrNotFound) {
			t.Fatalf("StoreItems on a final job = %v, want ErrNotFound", err)
		}
		if _, batch, err := s.StartJob(ctx, "j1", t0); err != nil || batch != nil {
			t.Fatalf("a final job's batch = %q, %v; want it dropped", batch, err)
		}
		if _, finished, _ := s.FinishJob(ctx, "j1", ingest.StatusFailed, "late", t0); finished {
			t.Fatal("FinishJob made a final job final again")
		}
	})
}

// TestStoringTheLastItemsEndsTheJob: the transaction that stores a job's
// last items makes it succeeded and frees its slot in the user's quota,
// so no reader ever finds it running with every item stored (GET
// /api/v1/jobs/{id} said running, items_done == items_total, until the
// worker's next transaction). A job with items left stays running, and
// FinishJob still ends one whose items were stored by an earlier run.
func TestStoringTheLastItemsEndsTheJob(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		s := ingest.NewSQLStore(db, nil)
		if _, _, err := s.Accept(ctx, acceptance("u1", "k1", "j1")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.StartJob(ctx, "j1", t0); err != nil {
			t.Fatal(err)
		}
		item := func(seq int) []ingest.StoredItem {
			return []ingest.StoredItem{{ID: fmt.Sprint("i", seq), UserID: "u1", JobID: "j1", Seq: seq, Project: "p", Item: ingest.Item{Text: "note", Kind: "note"}, CreatedAt: t0}}
		}
		if finished, err := s.StoreItems(ctx, "j1", item(0), 1, t0); err != nil || finished {
			t.Fatalf("StoreItems(1 of 2) = %v, %v", finished, err)
		}
		if j, _ := s.Job(ctx, "u1", "j1"); j.Status != ingest.StatusRunning || j.ItemsDone != 1 {
			t.Fatalf("with an item left: %+v, want running", j)
		}
		end := t0.Add(time.Minute)
		if finished, err := s.StoreItems(ctx, "j1", item(1), 2, end); err != nil || !finished {
			t.Fatalf("StoreItems(the last) = %v, %v; want finished", finished, err)
		}
		j, err := s.Job(ctx, "u1", "j1")
		if err != nil || j.Status != ingest.StatusSucceeded || j.ItemsDone != 2 || !j.FinishedAt.Equal(end) || j.Error != "" {
			t.Fatalf("once its last item is stored the job is %+v, %v; want succeeded at %v", j, err, end)
		}
		if items, jobs := usage(t, db, "u1"); items != 2 || jobs != 0 {
			t.Fatalf("usage = %d items, %d jobs; want 2 items and the job's slot free", items, jobs)
		}
		if _, finished, _ := s.FinishJob(ctx, "j1", ingest.StatusSucceeded, "", end); finished {
			t.Fatal("FinishJob ended the job again")
		}
	})
}

// TestIndexFollowsDeletes: deleting an item, or its user, takes it out of
// the full-text index too.
func TestIndexFollowsDeletes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		auth := store.NewAuthStore(db)
		mustUser(t, auth, "u1", "ada")
		mustUser(t, auth, "u2", "bob")
		s := ingest.NewSQLStore(db, nil)
		for _, u := range []string{"u1", "u2"} {
			if _, _, err := s.Accept(ctx, acceptance(u, "k", "j-"+u)); err != nil {
				t.Fatal(err)
			}
			s.StartJob(ctx, "j-"+u, t0)
			if _, err := s.StoreItems(ctx, "j-"+u, []ingest.StoredItem{
				{ID: u + "-0", UserID: u, JobID: "j-" + u, Seq: 0, Project: "p", Item: ingest.Item{Text: "shared word", Kind: "note"}, CreatedAt: t0},
				{ID: u + "-1", UserID: u, JobID: "j-" + u, Seq: 1, Project: "p", Item: ingest.Item{Text: "shared other", Kind: "note"}, CreatedAt: t0},
			}, 2, t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteItem(ctx, "u1", "u1-0"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "DELETE FROM users WHERE id = $1", "u2"); err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.SQLite {
			// FTS5 checks its index's own structure (it keeps no content
			// to check the index against).
			if _, err := db.ExecContext(ctx, "INSERT INTO items_terms (items_terms, rank) VALUES ('integrity-check', 0)"); err != nil {
				t.Fatalf("the index is corrupt: %v", err)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM items_terms"); n != 1 {
				t.Fatalf("the index holds %d items, want 1", n)
			}
		}
		if n := count(t, db, "SELECT COUNT(*) FROM items"); n != 1 {
			t.Fatalf("%d items left, want 1", n)
		}
		rs, err := s.Search(ctx, "u1", ingest.Search{Words: []string{"shared"}, Limit: 10})
		if err != nil || len(rs) != 1 || rs[0].ID != "u1-1" {
			t.Fatalf("Search = %+v, %v", rs, err)
		}
	})
}

// TestSweep deletes every expired key, however many, and no live one.
func TestSweep(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		const expired, live = 2001, 3 // three statements: 1000, 1000, 1
		var jobs, keys []string
		for i := range expired + live {
			exp := t0.UnixMilli()
			if i >= expired {
				exp += 1
			}
			jobs = append(jobs, fmt.Sprintf("('j%d', 'u1', 'k%d', 'p', 'succeeded', 1, %d)", i, i, t0.UnixMilli()))
			keys = append(keys, fmt.Sprintf("('u1', 'k%d', 'f', 'j%d', %d, %d)", i, i, t0.UnixMilli(), exp))
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, created_at) VALUES "+strings.Join(jobs, ", ")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO ingest_keys (user_id, ingest_id, fingerprint, job_id, created_at, expires_at) VALUES "+strings.Join(keys, ", ")); err != nil {
			t.Fatal(err)
		}
		s := ingest.NewSQLStore(db, nil)
		if n, err := s.DeleteExpiredKeys(ctx, t0); err != nil || n != expired {
			t.Fatalf("DeleteExpiredKeys = %d, %v; want %d", n, err, expired)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM ingest_keys"); n != live {
			t.Fatalf("%d keys left, want the %d live ones", n, live)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM jobs"); n != expired+live {
			t.Fatalf("%d jobs left, want all %d", n, expired+live)
		}
	})
}

// TestJobCounts counts every user's jobs by status.
func TestJobCounts(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		mustUser(t, store.NewAuthStore(db), "u2", "bob")
		s := ingest.NewSQLStore(db, nil)
		for i, u := range []string{"u1", "u1", "u2", "u2", "u2"} {
			if _, _, err := s.Accept(ctx, acceptance(u, fmt.Sprint("k", i), fmt.Sprint("j", i))); err != nil {
				t.Fatal(err)
			}
		}
		s.StartJob(ctx, "j0", t0)
		s.StartJob(ctx, "j1", t0)
		if _, _, err := s.FinishJob(ctx, "j1", ingest.StatusFailed, "a test", t0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.FinishJob(ctx, "j2", ingest.StatusSucceeded, "", t0); err != nil {
			t.Fatal(err)
		}
		if c, err := s.JobCounts(ctx); err != nil || c != (ingest.JobCounts{Queued: 2, Running: 1, Failed: 1}) {
			t.Fatalf("JobCounts = %+v, %v; want 2 queued, 1 running, 1 failed", c, err)
		}
		if n, err := s.QueuedJobs(ctx); err != nil || n != 2 {
			t.Fatalf("QueuedJobs = %d, %v; want 2", n, err)
		}
	})
}

// The counts of jobs read partial indexes, never the table: jobs are
// never deleted, and /metrics and the live snapshot count them often.
// (PostgreSQL is told to avoid a table scan where it can, since on a
// table this small it would rightly choose one.)
func TestJobCountsReadIndexes(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		explain := "EXPLAIN QUERY PLAN "
		if db.Dialect == store.Postgres {
			explain = "EXPLAIN "
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				t.Fatal(err)
			}
		}
		for i, q := range ingest.JobCountQueries {
			rows, err := tx.QueryContext(ctx, explain+q)
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			var plan []string
			for rows.Next() {
				v := make([]any, len(cols))
				for j := range v {
					v[j] = new(any)
				}
				if err := rows.Scan(v...); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, fmt.Sprint(*v[len(v)-1].(*any)))
			}
			rows.Close()
			text := strings.Join(plan, "\n")
			for _, index := range []string{"jobs_unfinished", "jobs_failed"}[:i+1] {
				if !strings.Contains(text, index) {
					t.Errorf("query %d does not read %s:\n%s", i, index, text)
				}
			}
			if strings.Contains(text, "Seq Scan") || strings.Contains(text, "SCAN jobs\n") || strings.HasSuffix(text, "SCAN jobs") {
				t.Errorf("query %d reads the whole table:\n%s", i, text)
			}
		}
	})
}

// mustUser creates the user id, named name.
func mustUser(tb testing.TB, s auth.Store, id, name string) auth.User {
	tb.Helper()
	u := auth.User{ID: id, Username: name, PasswordHash: "$argon2id$x", CreatedAt: t0}
	if err := s.CreateUser(context.Background(), u); err != nil {
		tb.Fatal(err)
	}
	return u
}
