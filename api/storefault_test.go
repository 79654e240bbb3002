package api_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// This file makes a real database misbehave, the same way on both
// dialects where it can.

// proxiedPostgres opens a fresh, migrated PostgreSQL database whose
// connections go through a proxy the test controls.
func proxiedPostgres(tb testing.TB) (*store.DB, *testproxy.Proxy) {
	tb.Helper()
	u, err := url.Parse(storetest.URL(tb, store.Postgres))
	if err != nil {
		tb.Fatal(err)
	}
	p := testproxy.New(tb, u.Host)
	u.Host = p.Addr()
	db, err := store.Open(context.Background(), u.String(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background(), storetest.Features()...); err != nil {
		tb.Fatal(err)
	}
	return db, p
}

// holdWrites stalls writes as another client of the database would, until
// release: on SQLite a transaction holding the write lock (every writer
// waits, up to its busy timeout); on PostgreSQL one holding the row lock of
// the user (writes to that user wait).
func holdWrites(tb testing.TB, db *store.DB, userID string) (release func()) {
	tb.Helper()
	tx, err := db.BeginTx(context.Background(), nil) // SQLite: BEGIN IMMEDIATE
	if err != nil {
		tb.Fatal(err)
	}
	if db.Dialect == store.Postgres {
		if _, err := tx.ExecContext(context.Background(), "SELECT 1 FROM users WHERE id = $1 FOR UPDATE", userID); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { tx.Rollback() })
	return func() { tx.Rollback() }
}

// failDeletes makes every deletion of a session fail until undo, with a
// trigger that raises an error: a fault inside the statement, the way a
// constraint or the disk would fail it.
func failDeletes(tb testing.TB, db *store.DB) (undo func()) {
	tb.Helper()
	create := []string{"CREATE TRIGGER fail_deletes BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'injected failure'); END"}
	drop := "DROP TRIGGER fail_deletes"
	if db.Dialect == store.Postgres {
		create = []string{
			"CREATE FUNCTION fail_deletes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$",
			"CREATE TRIGGER fail_deletes BEFORE DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION fail_deletes()",
		}
		drop = "DROP TRIGGER fail_deletes ON sessions"
	}
	for _, q := range create {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			tb.Fatal(err)
		}
	}
	return func() {
		if _, err := db.ExecContext(context.Background(), drop); err != nil {
			tb.Fatal(err)
		}
	}
}
