// Package storetest opens real, empty, migrated databases for tests: a
// SQLite file in a temp dir, and a fresh schema on the PostgreSQL server
// named by BRAIN_TEST_DATABASE_URL. Without that variable the PostgreSQL
// tests skip, except under CI=true, where they fail.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/brain-template/brain/store"
)

// Dialects are the databases every store test runs on.
var Dialects = []store.Dialect{store.SQLite, store.Postgres}

// Run runs f once per dialect, as subtests named after it.
func Run(t *testing.T, f func(t *testing.T, db *store.DB)) {
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) { f(t, Open(t, d)) })
	}
}

// Open returns a migrated, empty database of dialect d, closed (and, on
// PostgreSQL, dropped) when the test ends.
func Open(tb testing.TB, d store.Dialect) *store.DB {
	tb.Helper()
	dsn := URL(tb, d)
	db, err := store.Open(context.Background(), dsn, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return db
}

// URL returns a database URL for a fresh, empty database of dialect d: ""
// for SQLite (a new data dir each time), or a PostgreSQL URL whose
// search_path is a new schema, dropped when the test ends.
func URL(tb testing.TB, d store.Dialect) string {
	tb.Helper()
	if d == store.SQLite {
		return ""
	}
	base := os.Getenv("BRAIN_TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("BRAIN_TEST_DATABASE_URL is not set: CI must test PostgreSQL (.ci/run sets it)")
		}
		tb.Skip("BRAIN_TEST_DATABASE_URL is not set; skipping PostgreSQL")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "brain_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		if os.Getenv("CI") != "true" {
			tb.Skipf("PostgreSQL at BRAIN_TEST_DATABASE_URL does not answer: %v", err)
		}
		tb.Fatalf("PostgreSQL at BRAIN_TEST_DATABASE_URL: %v", err)
	}
	tb.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
			admin.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
