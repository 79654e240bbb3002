// Package store holds brain's databases and their migrations: SQLite in the
// data directory by default (pure Go, no cgo), PostgreSQL to scale out. The
// domain stores in this package run the same SQL on both; where the
// dialects differ, they say so.
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

// ErrNotFound is what a store's method returns when no row is what it
// names: fault.ErrNotFound, which every store returns (auth.ErrNotFound and
// a feature's are the same error).
var ErrNotFound = fault.ErrNotFound

// DB is an open database. It is safe for concurrent use; call Close when done.
//
// Every call through a DB ends within Timeout (see deadline.go), so code in
// this package reaches the database only through DB's methods, never
// through the *sql.DB underneath.
type DB struct {
	bounded
	sql     *sql.DB
	stmts   *stmtCache // SQLite's prepared statements; nil on PostgreSQL
	Dialect Dialect
	// Timeout bounds each call: a statement, a ping, or a transaction from
	// BeginTx to Commit. It must be positive. Open sets DefaultTimeout;
	// change it before the DB is shared. Migrate is not bounded by it.
	Timeout time.Duration
}

// DefaultTimeout is how long a call may wait for the database: far beyond
// what a healthy one needs, short enough that a request fails before its
// client gives up.
const DefaultTimeout = 5 * time.Second

// newDB wraps sqldb with the default timeout.
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

// sqlitePragmas make concurrent writers wait instead of failing: WAL lets
// readers run beside the writer, busy_timeout makes a writer wait for the
// lock, and _txlock=immediate takes the write lock at BEGIN, so a
// transaction never fails with SQLITE_BUSY when it upgrades from read to
// write (where busy_timeout cannot help). The driver ends a wait for the
// lock when the call's context is done, so DB.Timeout, when shorter, wins
// over busy_timeout.
const sqlitePragmas = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"

// Open opens the database: PostgreSQL when databaseURL is postgres://...,
// else SQLite in dataDir (created if missing). It does not migrate.
func Open(ctx context.Context, databaseURL, dataDir string) (*DB, error) {
	var db *DB
	switch {
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		sqldb, err := sql.Open("pgx", databaseURL)
		if err != nil {
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		sqldb.SetMaxOpenConns(20)
		sqldb.SetMaxIdleConns(20)
		db = newDB(sqldb, Postgres)
	case databaseURL == "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("store: data dir: %w", err)
		}
		return OpenSQLite(ctx, SQLitePath(dataDir))
	default:
		return nil, errors.New("store: the database URL must be empty (SQLite) or a postgres:// URL")
	}
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
	// Connections are kept for reuse (database/sql keeps 2 by default):
	// opening one costs a file open and the pragmas, which under load was
	// a sixth of the CPU of an idempotent replay (BENCHMARKS.md).
	sqldb.SetMaxIdleConns(32)
	db := newDB(sqldb, SQLite)
	db.stmts = &stmtCache{db: sqldb, stmts: map[string]*sql.Stmt{}}
	db.bounded.run = db.stmts
	// Switching a new file to WAL takes a lock that busy_timeout does not
	// always wait for: when several processes open the same new database
	// at once, the losers get SQLITE_BUSY. They try again for a while.
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
