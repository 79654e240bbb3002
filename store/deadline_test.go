package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// Every kind of call (a statement, a query, a single-row query, a
// transaction) ends within DB.Timeout when the database stops answering,
// though the caller's context has no deadline; and the database is usable
// again once it answers.
func TestEveryCallHasADeadline(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			db, stall := storetest.OpenStallable(t, d)
			db.Timeout = 200 * time.Millisecond
			// The deadline, and room for a loaded machine; below SQLite's 10 s
			// busy timeout, which would end a stalled call too.
			const bound = 200*time.Millisecond + 5*time.Second
			s := store.NewAuthStore(db)
			ctx := context.Background()
			u := mustUser(t, s, "u1", "ada")
			key := auth.APIKey{ID: "k1", UserID: u.ID, Name: "ci", Prefix: "brk_abcd", KeyHash: "kh1", CreatedAt: t0}
			if err := s.CreateAPIKey(ctx, key, 10); err != nil {
				t.Fatal(err)
			}

			type call struct {
				name string
				call func() error
			}
			n := 0
			calls := []call{
				{"exec", func() error { // a new user each time: a stalled insert may still land later
					n++
					return s.CreateUser(ctx, auth.User{ID: fmt.Sprint("u-", n), Username: fmt.Sprint("user", n), PasswordHash: "h", CreatedAt: t0})
				}},
				{"transaction", func() error { return s.TouchAPIKeys(ctx, map[string]time.Time{"k1": t0.Add(time.Hour)}) }},
			}
			if d == store.Postgres { // SQLite's readers do not wait for its writer
				calls = append(calls,
					call{"query_row", func() error { _, err := s.UserByID(ctx, u.ID); return err }},
					call{"query", func() error { _, err := s.ListAPIKeys(ctx, u.ID, auth.Cursor{}, 10); return err }},
				)
			}
			var tx *store.Tx
			if d == store.Postgres { // on SQLite, an open transaction would keep the stall from starting
				var err error
				if tx, err = db.BeginTx(ctx, nil); err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				// A transaction begun before the stall: its statements are
				// bounded by its deadline, not by their own context.
				calls = append([]call{{"statement_in_transaction", func() error {
					_, err := tx.ExecContext(ctx, "UPDATE users SET password_hash = 'x' WHERE id = $1", u.ID)
					return err
				}}}, calls...)
			}
			stall.Start()
			for _, c := range calls {
				start := time.Now()
				err := c.call()
				took := time.Since(start)
				t.Logf("%s with the database stalled: %v after %v", c.name, err, took.Round(time.Millisecond))
				if err == nil || took > bound {
					t.Errorf("%s with the database stalled: err = %v after %v; want an error within %v", c.name, err, took, bound)
				}
			}
			stall.Stop()
			// Usable again: the calls may now open new connections, which
			// on a loaded machine can take longer than the 200 ms bound
			// the stalled calls had.
			db.Timeout = store.DefaultTimeout
			for _, c := range calls {
				if c.name == "statement_in_transaction" {
					continue // that transaction is over
				}
				if err := c.call(); err != nil {
					t.Errorf("%s once the database answers again: %v", c.name, err)
				}
			}
		})
	}
}
