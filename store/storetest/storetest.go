// Package storetest opens real, empty, migrated databases for tests: a
// SQLite file in a temp dir, and a fresh schema on the PostgreSQL server
// named by BRAIN_TEST_DATABASE_URL (skipped without it, but under CI=true).
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/store"
)

// Dialects are the databases every store test runs on.
var Dialects = []store.Dialect{store.SQLite, store.Postgres}

var (
	featuresMu sync.Mutex
	features   []store.Migrations
)

// Use adds feature migration sets to every database opened from now on.
func Use(sets ...store.Migrations) {
	featuresMu.Lock()
	defer featuresMu.Unlock()
	for _, s := range sets {
		if !slices.ContainsFunc(features, func(f store.Migrations) bool { return f.Name == s.Name }) {
			features = append(features, s)
		}
	}
}

// Features returns the migration sets added by [Use].
func Features() []store.Migrations {
	featuresMu.Lock()
	defer featuresMu.Unlock()
	return slices.Clone(features)
}

// Run runs f once per dialect, as subtests named after it.
func Run(t *testing.T, f func(t *testing.T, db *store.DB)) {
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) { f(t, Open(t, d)) })
	}
}

// Open returns an empty, migrated database of dialect d for the test.
func Open(tb testing.TB, d store.Dialect) *store.DB {
	tb.Helper()
	return open(tb, URL(tb, d), tb.TempDir())
}

func open(tb testing.TB, dsn, dataDir string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), dsn, dataDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background(), Features()...); err != nil {
		tb.Fatal(err)
	}
	return db
}

// A Stall makes a database stop answering ([OpenStallable]).
type Stall struct {
	Start func() // the database stops answering (SQLite's still reads)
	Stop  func() // it answers again
}

// OpenStallable is [Open] for a database whose calls the test can stall.
func OpenStallable(tb testing.TB, d store.Dialect) (*store.DB, *Stall) {
	tb.Helper()
	if d == store.Postgres {
		u, err := url.Parse(URL(tb, d))
		if err != nil {
			tb.Fatal(err)
		}
		p := testproxy.New(tb, u.Host)
		u.Host = p.Addr()
		return open(tb, u.String(), ""), &Stall{Start: p.Stall, Stop: p.Restore}
	}
	dir := tb.TempDir()
	db := open(tb, "", dir)
	raw, err := sql.Open("sqlite", "file:"+store.SQLitePath(dir)+"?_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	var tx *sql.Tx
	return db, &Stall{
		Start: func() {
			if tx, err = raw.Begin(); err != nil {
				tb.Fatal(err)
			}
		},
		Stop: func() {
			if tx != nil {
				tx.Rollback()
				tx = nil
			}
		},
	}
}

// URL returns a fresh, empty database of dialect d: "" for SQLite, or a
// PostgreSQL URL whose search_path is a new schema.
func URL(tb testing.TB, d store.Dialect) string {
	tb.Helper()
	if d == store.SQLite {
		return ""
	}
	base := os.Getenv(product.EnvPrefix + "TEST_DATABASE_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal(product.EnvPrefix + "TEST_DATABASE_URL is not set: CI must test PostgreSQL (.ci/run sets it)")
		}
		tb.Skip(product.EnvPrefix + "TEST_DATABASE_URL is not set; skipping PostgreSQL")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := product.Name + "_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		if os.Getenv("CI") != "true" {
			tb.Skipf("PostgreSQL at "+product.EnvPrefix+"TEST_DATABASE_URL does not answer: %v", err)
		}
		tb.Fatalf("PostgreSQL at "+product.EnvPrefix+"TEST_DATABASE_URL: %v", err)
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
