package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed migrations
var migrations embed.FS

// A migration is one numbered SQL file, NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the dialect's migrations in version order.
func loadMigrations(d Dialect) ([]migration, error) {
	dir := path.Join("migrations", string(d))
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("store: migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrations, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: migrations of %s must be numbered 1, 2, 3...: found %d at place %d", d, m.version, i+1)
		}
	}
	return out, nil
}

// steps are the Go parts of migrations, by name: each runs right after
// its migration's SQL, in the same transaction, and writes what SQL alone
// cannot (rows computed by a feature's own code). Features add theirs
// with [MigrationStep].
var (
	stepsMu sync.Mutex
	steps   = map[string]func(ctx context.Context, tx *sql.Tx, d Dialect) error{}
)

// MigrationStep registers the Go part of the migration named name
// (NNNN_name.sql): Migrate runs step right after that migration's SQL, in
// the same transaction, to write what SQL alone cannot. Call it from the
// feature's init, so that every Migrate of a binary that holds the feature
// runs it. A name registered twice panics.
func MigrationStep(name string, step func(ctx context.Context, tx *sql.Tx, d Dialect) error) {
	stepsMu.Lock()
	defer stepsMu.Unlock()
	if steps[name] != nil {
		panic("store: MigrationStep: two steps for migration " + name)
	}
	steps[name] = step
}

// stepOf is the registered step of the migration named name, or nil.
func stepOf(name string) func(ctx context.Context, tx *sql.Tx, d Dialect) error {
	stepsMu.Lock()
	defer stepsMu.Unlock()
	return steps[name]
}

// SchemaVersion returns the newest migration the binary knows.
func SchemaVersion(d Dialect) int {
	ms, _ := loadMigrations(d)
	return len(ms)
}

// ErrSchemaTooNew means the database was migrated by a newer brain.
type ErrSchemaTooNew struct{ Database, Binary int }

// Error says which versions differ and what to do.
func (e *ErrSchemaTooNew) Error() string {
	return fmt.Sprintf("store: the database schema is at version %d but this brain knows only up to %d: run a brain at least as new as the one that migrated it", e.Database, e.Binary)
}

// pgMigrateLock is the advisory-lock key replicas take while migrating.
const pgMigrateLock = 0x6272_6169_6e00 // "brain\x00"

// Migrate brings the schema up to date, applying each missing migration in
// its own transaction. It is safe when several replicas start at once: on
// PostgreSQL they queue on an advisory lock; on SQLite, on the write lock.
// A schema newer than the binary knows is an [ErrSchemaTooNew]. Then come
// the job queue's tables, River's own migrations (see migrateQueue), under
// the same lock; applied counts brain's migrations only.
//
// Migrate is not bounded by DB.Timeout, and has no bound of its own: a
// migration may rebuild a large table, and a replica waits on the lock for
// as long as another one migrates. Only ctx ends it (brain's start-up
// context, which a signal cancels).
func (db *DB) Migrate(ctx context.Context) (applied int, err error) {
	return db.migrate(ctx, -1)
}

// MigrateBefore applies the migrations that come before the one named
// name (NNNN_name.sql), and none of River's: for the test of a
// migration, which fills the tables as they were before it, then runs
// Migrate.
func (db *DB) MigrateBefore(ctx context.Context, name string) error {
	ms, err := loadMigrations(db.Dialect)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ms, func(m migration) bool { return m.name == name })
	if i < 0 {
		return fmt.Errorf("store: no migration named %s", name)
	}
	_, err = db.migrate(ctx, i)
	return err
}

// migrate is Migrate, up to version to only when to is not -1 (for the
// tests of a migration, which need the schema before it); River's
// migrations then wait for a full Migrate.
func (db *DB) migrate(ctx context.Context, to int) (applied int, err error) {
	ms, err := loadMigrations(db.Dialect)
	if err != nil {
		return 0, err
	}
	upTo := ms
	if to >= 0 {
		upTo = ms[:to]
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close()
	if db.Dialect == Postgres {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", pgMigrateLock); err != nil {
			return 0, fmt.Errorf("store: migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", pgMigrateLock)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return 0, fmt.Errorf("store: migrate: %w", err)
	}
	for {
		done, err := db.migrateOne(ctx, conn, upTo, len(ms))
		if err != nil {
			return applied, err
		}
		if done && to >= 0 {
			return applied, nil
		}
		if done {
			return applied, db.migrateQueue(ctx, conn)
		}
		applied++
	}
}

// migrateOne applies the next missing migration of ms, if any, in a
// transaction that first re-reads the version under the write lock. known
// is how many migrations this binary has.
func (db *DB) migrateOne(ctx context.Context, conn *sql.Conn, ms []migration, known int) (done bool, err error) {
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE on SQLite: the write lock
	if err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	if current > known {
		return false, &ErrSchemaTooNew{Database: current, Binary: known}
	}
	if current >= len(ms) {
		return true, nil
	}
	m := ms[current]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
	}
	if step := stepOf(m.name); step != nil {
		if err := step(ctx, tx, db.Dialect); err != nil {
			return false, fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("store: migration %d: %w", m.version, err)
	}
	return false, tx.Commit()
}
