package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func mustUser(tb testing.TB, s auth.Store, id, name string) auth.User {
	tb.Helper()
	u := auth.User{ID: id, Username: name, PasswordHash: "$argon2id$x", CreatedAt: t0}
	if err := s.CreateUser(context.Background(), u); err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestAuthStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := store.NewAuthStore(db)

		t.Run("Users", func(t *testing.T) {
			u := mustUser(t, s, "u1", "ada")
			if err := s.CreateUser(ctx, auth.User{ID: "u2", Username: "ada", PasswordHash: "h", CreatedAt: t0}); !errors.Is(err, auth.ErrConflict) {
				t.Fatalf("duplicate username: err = %v, want ErrConflict", err)
			}
			got, err := s.UserByUsername(ctx, "ada")
			if err != nil || got != u {
				t.Fatalf("UserByUsername = %+v, %v; want %+v", got, err, u)
			}
			if got, err := s.UserByID(ctx, "u1"); err != nil || got != u {
				t.Fatalf("UserByID = %+v, %v", got, err)
			}
			if _, err := s.UserByUsername(ctx, "nobody"); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("unknown user: err = %v, want ErrNotFound", err)
			}
			if n, err := s.CountUsers(ctx); err != nil || n != 1 {
				t.Fatalf("CountUsers = %d, %v; want 1", n, err)
			}
		})

		t.Run("Sessions", func(t *testing.T) {
			u := mustUser(t, s, "s-user", "grace")
			other := mustUser(t, s, "s-other", "linus")
			for _, se := range []auth.Session{
				{TokenHash: "h1", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), LastSeenAt: t0},
				{TokenHash: "h2", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), LastSeenAt: t0},
				{TokenHash: "h3", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), LastSeenAt: t0},
				{TokenHash: "h4", UserID: other.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), LastSeenAt: t0},
			} {
				if _, err := s.CreateSession(ctx, se, 10); err != nil {
					t.Fatal(err)
				}
			}
			se, su, err := s.SessionByTokenHash(ctx, "h1")
			if err != nil || su.ID != u.ID || !se.ExpiresAt.Equal(t0.Add(time.Hour)) || !se.LastSeenAt.Equal(t0) {
				t.Fatalf("SessionByTokenHash = %+v, %+v, %v", se, su, err)
			}
			if err := s.TouchSessions(ctx, map[string]time.Time{"h1": t0.Add(time.Minute), "h2": t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if err := s.TouchSessions(ctx, map[string]time.Time{"h1": t0.Add(time.Second)}); err != nil { // older: ignored
				t.Fatal(err)
			}
			if se, _, _ := s.SessionByTokenHash(ctx, "h1"); !se.LastSeenAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("LastSeenAt = %v, want the newest touch", se.LastSeenAt)
			}
			if err := s.SetPasswordAndEndSessions(ctx, u.ID, "new", "h1"); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.UserByID(ctx, u.ID); got.PasswordHash != "new" {
				t.Fatalf("password hash = %q after SetPasswordAndEndSessions", got.PasswordHash)
			}
			for hash, want := range map[string]error{"h1": nil, "h2": auth.ErrNotFound, "h3": auth.ErrNotFound, "h4": nil} {
				if _, _, err := s.SessionByTokenHash(ctx, hash); !errors.Is(err, want) {
					t.Errorf("after SetPasswordAndEndSessions keeping h1: session %s err = %v, want %v", hash, err, want)
				}
			}
			if err := s.SetPasswordAndEndSessions(ctx, "missing", "x", ""); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("SetPasswordAndEndSessions(missing) = %v, want ErrNotFound", err)
			}
			if err := s.DeleteSession(ctx, "h1"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SessionByTokenHash(ctx, "h1"); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("deleted session: err = %v", err)
			}
			// h4: expires at t0+1h, last seen t0. Idle 30 min at t0+31min removes it.
			if n, err := s.DeleteExpiredSessions(ctx, t0.Add(31*time.Minute), 30*time.Minute); err != nil || n != 1 {
				t.Fatalf("DeleteExpiredSessions = %d, %v; want 1", n, err)
			}
		})

		t.Run("APIKeys", func(t *testing.T) {
			u := mustUser(t, s, "k-user", "barbara")
			other := mustUser(t, s, "k-other", "ken")
			k1 := auth.APIKey{ID: "k1", UserID: u.ID, Name: "laptop", Prefix: "brk_abcd", KeyHash: "kh1", CreatedAt: t0}
			k2 := auth.APIKey{ID: "k2", UserID: u.ID, Name: "ci", Prefix: "brk_efgh", KeyHash: "kh2", CreatedAt: t0.Add(time.Second)}
			for _, k := range []auth.APIKey{k1, k2} {
				if err := s.CreateAPIKey(ctx, k, 10); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CreateAPIKey(ctx, auth.APIKey{ID: "k3", UserID: u.ID, Name: "dup", KeyHash: "kh1", CreatedAt: t0}, 10); !errors.Is(err, auth.ErrConflict) {
				t.Fatalf("duplicate key hash: err = %v, want ErrConflict", err)
			}
			got, gu, err := s.APIKeyByHash(ctx, "kh1")
			if err != nil || got != k1 || gu.ID != u.ID {
				t.Fatalf("APIKeyByHash = %+v, %+v, %v", got, gu, err)
			}
			keys, err := s.ListAPIKeys(ctx, u.ID, auth.Cursor{}, 10)
			if err != nil || len(keys) != 2 || keys[0].ID != "k2" || keys[1].ID != "k1" {
				t.Fatalf("ListAPIKeys = %+v, %v; want k2 then k1 (newest first)", keys, err)
			}
			if keys, _ := s.ListAPIKeys(ctx, other.ID, auth.Cursor{}, 10); len(keys) != 0 {
				t.Fatalf("another user's keys = %+v, want none", keys)
			}
			if err := s.TouchAPIKeys(ctx, map[string]time.Time{"k1": t0.Add(time.Hour), "k2": t0.Add(2 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := s.APIKeyByHash(ctx, "kh2"); !got.LastUsedAt.Equal(t0.Add(2 * time.Hour)) {
				t.Fatalf("LastUsedAt = %v after TouchAPIKeys", got.LastUsedAt)
			}
			if err := s.DeleteAPIKey(ctx, other.ID, "k1"); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("deleting another user's key: err = %v, want ErrNotFound", err)
			}
			if err := s.DeleteAPIKey(ctx, u.ID, "k1"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.APIKeyByHash(ctx, "kh1"); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("deleted key: err = %v", err)
			}
		})

		t.Run("SessionCap", func(t *testing.T) {
			u := mustUser(t, s, "c-user", "edsger")
			session := func(hash string, created time.Time) auth.Session {
				return auth.Session{TokenHash: hash, UserID: u.ID, CreatedAt: created, ExpiresAt: created.Add(time.Hour), LastSeenAt: created}
			}
			// c1 is the oldest; c2 and c3 share a millisecond.
			for _, se := range []auth.Session{session("c1", t0), session("c2", t0.Add(time.Second)), session("c3", t0.Add(time.Second))} {
				if evicted, err := s.CreateSession(ctx, se, 3); err != nil || len(evicted) != 0 {
					t.Fatalf("CreateSession under the cap = %v, %v; want nothing evicted", evicted, err)
				}
			}
			evicted, err := s.CreateSession(ctx, session("c4", t0.Add(2*time.Second)), 3)
			if err != nil || len(evicted) != 1 || evicted[0] != "c1" {
				t.Fatalf("CreateSession at the cap evicted %v, %v; want the oldest, c1", evicted, err)
			}
			// The cap lowered to 2: the oldest two of c2, c3, c4 go.
			evicted, err = s.CreateSession(ctx, session("c5", t0.Add(3*time.Second)), 2)
			slices.Sort(evicted)
			if err != nil || !slices.Equal(evicted, []string{"c2", "c3"}) {
				t.Fatalf("CreateSession over a lowered cap evicted %v, %v; want c2 and c3", evicted, err)
			}
			for hash, want := range map[string]error{"c4": nil, "c5": nil, "c1": auth.ErrNotFound} {
				if _, _, err := s.SessionByTokenHash(ctx, hash); !errors.Is(err, want) {
					t.Errorf("session %s: err = %v, want %v", hash, err, want)
				}
			}
			if _, err := s.CreateSession(ctx, auth.Session{TokenHash: "c6", UserID: "nobody", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, 3); !errors.Is(err, auth.ErrNotFound) {
				t.Fatalf("a session of an unknown user: err = %v, want ErrNotFound", err)
			}
		})

		t.Run("APIKeyCapAndPages", func(t *testing.T) {
			u := mustUser(t, s, "p-user", "frances")
			// Seven keys, pk0 the oldest; pk3..pk6 share a millisecond, and
			// pages of 3 end inside it.
			for i := range 7 {
				k := auth.APIKey{ID: fmt.Sprintf("pk%d", i), UserID: u.ID, Name: "n", KeyHash: fmt.Sprintf("p%d", i), CreatedAt: t0.Add(time.Duration(min(i, 3)) * time.Millisecond)}
				if err := s.CreateAPIKey(ctx, k, 7); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"pk3", "pk4", "pk5", "pk6", "pk2", "pk1", "pk0"} // created_at descending, then id
			if err := s.CreateAPIKey(ctx, auth.APIKey{ID: "pk7", UserID: u.ID, KeyHash: "p7", CreatedAt: t0}, 7); !errors.Is(err, auth.ErrTooMany) {
				t.Fatalf("an 8th key with a cap of 7: err = %v, want ErrTooMany", err)
			}
			var got []string
			after := auth.Cursor{}
			for {
				page, err := s.ListAPIKeys(ctx, u.ID, after, 3)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range page {
					got = append(got, k.ID)
				}
				if len(page) < 3 {
					break
				}
				last := page[len(page)-1]
				after = auth.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pages of 3 gave %v, want %v", got, want)
			}
		})
	})
}

func TestMigrate(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			url := storetest.URL(t, d)
			dir := t.TempDir()
			// Several replicas start at once on an empty database.
			const replicas = 4
			var wg sync.WaitGroup
			errs := make(chan error, replicas)
			applied := make(chan int, replicas)
			for range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := store.Open(ctx, url, dir)
					if err != nil {
						errs <- err
						return
					}
					defer db.Close()
					n, err := db.Migrate(ctx)
					errs <- err
					applied <- n
				}()
			}
			wg.Wait()
			close(errs)
			close(applied)
			for err := range errs {
				if err != nil {
					t.Fatalf("concurrent Migrate: %v", err)
				}
			}
			total := 0
			for n := range applied {
				total += n
			}
			if want := store.PlatformMigrations(d); total != want {
				t.Fatalf("replicas applied %d migrations in all, want each of the %d once", total, want)
			}

			db, err := store.Open(ctx, url, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if n, err := db.Migrate(ctx); err != nil || n != 0 {
				t.Fatalf("Migrate on an up-to-date schema = %d, %v; want 0, nil", n, err)
			}
			// A newer brain migrated this database: refuse to start.
			if _, err := db.ExecContext(ctx, "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ('platform', 999, 'future', 0)"); err != nil {
				t.Fatal(err)
			}
			var tooNew *store.ErrSchemaTooNew
			if _, err := db.Migrate(ctx); !errors.As(err, &tooNew) || tooNew.Set != "platform" || tooNew.Database != 999 {
				t.Fatalf("Migrate on a newer schema = %v, want ErrSchemaTooNew at 999", err)
			}
		})
	}
}

// A flush of more sessions than one batch holds is written whole, the
// first, a middle and the last batch alike.
func TestTouchManySessions(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := store.NewAuthStore(db)
		u := mustUser(t, s, "u1", "ada")
		const n = 1200
		touched := map[string]time.Time{}
		values := make([]string, n)
		for i := range n {
			h := fmt.Sprintf("h%04d", i)
			values[i] = fmt.Sprintf("('%s', '%s', %d, %d, %d)", h, u.ID, t0.UnixMilli(), t0.Add(time.Hour).UnixMilli(), t0.UnixMilli())
			touched[h] = t0.Add(time.Minute)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, last_seen_at) VALUES "+strings.Join(values, ", ")); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchSessions(ctx, touched); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"h0000", "h0599", "h1199"} {
			if se, _, err := s.SessionByTokenHash(ctx, h); err != nil || !se.LastSeenAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("%s: LastSeenAt = %v, %v; want the touch", h, se.LastSeenAt, err)
			}
		}
	})
}
