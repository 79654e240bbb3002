// Package store holds brain's databases and their migrations: SQLite in the
// data directory by default, PostgreSQL to scale out, with the same SQL.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	sqlite "modernc.org/sqlite"        // registers "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a database engine.
type Dialect string

const (
	SQLite   Dialect = "sqlite"   // the embedded default, a file in the data dir
	Postgres Dialect = "postgres" // the scale-out path
)

// ErrNotFound is what a store returns when no row is what it names.
var ErrNotFound = fault.ErrNotFound

// DB is an open database, safe for concurrent use, whose every call ends
// within Timeout.
type DB struct {
	bounded
	sql     *sql.DB
	stmts   *stmtCache // nil on PostgreSQL
	Dialect Dialect
	Timeout time.Duration // of each statement, ping or transaction
}

// DefaultTimeout is far beyond what a healthy database needs.
const DefaultTimeout = 5 * time.Second

func newDB(sqldb *sql.DB, d Dialect) *DB {
	db := &DB{sql: sqldb, Dialect: d, Timeout: DefaultTimeout}
	db.bounded = bounded{run: sqldb, bound: db.WithTimeout}
	return db
}

// Close closes the database. Calls in flight end first.
func (db *DB) Close() error {
	if db.stmts != nil {
		db.stmts.close()
	}
	return db.sql.Close()
}

// SQLitePath is where the embedded database lives in dataDir.
func SQLitePath(dataDir string) string { return filepath.Join(dataDir, product.DatabaseFile) }

// sqlitePragmas make concurrent writers wait instead of failing.
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// Open opens the database: PostgreSQL when databaseURL is postgres://...,
// else SQLite in dataDir (created if missing). It does not migrate.
func Open(ctx context.Context, databaseURL, dataDir string) (*DB, error) {
	if databaseURL == "" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("store: data dir: %w", err)
		}
		return OpenSQLite(ctx, SQLitePath(dataDir))
	}
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		return nil, errors.New("store: the database URL must be empty (SQLite) or a postgres:// URL")
	}
	sqldb, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	sqldb.SetMaxOpenConns(20)
	sqldb.SetMaxIdleConns(20)
	db := newDB(sqldb, Postgres)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return db, nil
}

// OpenSQLite opens (creating if needed) the SQLite database at path.
func OpenSQLite(ctx context.Context, path string) (*DB, error) {
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+sqlitePragmas)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	sqldb.SetMaxIdleConns(32) // opening one is costly (BENCHMARKS.md)
	db := newDB(sqldb, SQLite)
	db.stmts = &stmtCache{db: sqldb, stmts: map[string]*sql.Stmt{}}
	db.bounded.run = db.stmts
	// Processes racing to switch a new file to WAL retry.
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, time.Second) {
		err := db.PingContext(ctx)
		if err == nil {
			return db, nil
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || ctx.Err() != nil || wait >= time.Second {
			db.Close()
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
}
