package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/riverqueue/river/rivermigrate"
)

// pgMigrateLock is the advisory-lock key replicas take while migrating.
const pgMigrateLock = 0x6272_6169_6e00 // "brain\0"; a renamed fork keeps it

// Migrate applies the missing migrations of the platform, then features',
// then River's, with replicas taking turns on a lock. A set newer in the
// database than the binary is an [ErrSchemaTooNew].
func (db *DB) Migrate(ctx context.Context, features ...Migrations) (applied int, err error) {
	sets, err := loadSets(db.Dialect, features)
	if err != nil {
		return 0, err
	}
	return db.migrate(ctx, sets, true)
}

// MigrateBefore applies the sets up to, not including, migration name of
// set: for a migration's test.
func (db *DB) MigrateBefore(ctx context.Context, set, name string, features ...Migrations) error {
	sets, err := loadSets(db.Dialect, features)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(sets, func(s loadedSet) bool { return s.name == set })
	if i < 0 {
		return fmt.Errorf("store: no migration set named %s", set)
	}
	j := slices.IndexFunc(sets[i].ms, func(m migration) bool { return m.name == name })
	if j < 0 {
		return fmt.Errorf("store: no migration named %s in %s", name, set)
	}
	upTo := append(slices.Clone(sets[:i]), loadedSet{name: set, ms: sets[i].ms[:j]})
	_, err = db.migrate(ctx, upTo, false)
	return err
}

const createBookkeeping = `CREATE TABLE IF NOT EXISTS schema_migrations (
	set_name   TEXT NOT NULL,
	version    INTEGER NOT NULL,
	name       TEXT NOT NULL,
	applied_at BIGINT NOT NULL,
	PRIMARY KEY (set_name, version))`

// migrate applies sets in order, then River's migrations when queue is set.
func (db *DB) migrate(ctx context.Context, sets []loadedSet, queue bool) (applied int, err error) {
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
	if _, err := conn.ExecContext(ctx, createBookkeeping); err != nil {
		return 0, fmt.Errorf("store: migrate: %w", err)
	}
	for _, s := range sets {
		for {
			done, err := db.migrateOne(ctx, conn, s)
			if err != nil {
				return applied, err
			}
			if done {
				break
			}
			applied++
		}
	}
	if !queue {
		return applied, nil
	}
	m, err := rivermigrate.New(db.riverDriver(), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	for done := false; err == nil && !done; {
		done, err = migrateQueueOne(ctx, conn, m)
	}
	if err != nil {
		return applied, fmt.Errorf("store: migrate the job queue: %w", err)
	}
	return applied, nil
}

// migrateOne applies the next missing migration of s, if any.
func (db *DB) migrateOne(ctx context.Context, conn *sql.Conn, s loadedSet) (done bool, err error) {
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE on SQLite: the write lock
	if err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE set_name = $1", s.name).Scan(&current); err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	if current > len(s.ms) {
		return false, &ErrSchemaTooNew{Set: s.name, Database: current, Binary: len(s.ms)}
	}
	if current == len(s.ms) {
		return true, nil
	}
	m := s.ms[current]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("store: migration %s %d (%s): %w", s.name, m.version, m.name, err)
	}
	if m.step != nil {
		if err := m.step(ctx, tx, db.Dialect); err != nil {
			return false, fmt.Errorf("store: migration %s %d (%s): %w", s.name, m.version, m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ($1, $2, $3, $4)",
		s.name, m.version, m.name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("store: migration %s %d: %w", s.name, m.version, err)
	}
	return false, tx.Commit()
}

// migrateQueueOne applies River's next missing migration, if any, in a
// transaction that re-reads the applied versions under Migrate's lock.
func migrateQueueOne(ctx context.Context, conn *sql.Conn, m *rivermigrate.Migrator[*sql.Tx]) (done bool, err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	//lint:ignore SA1019 one version per transaction, re-read under the lock
	res, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
	if err != nil {
		return false, err
	}
	if len(res.Versions) == 0 {
		return true, nil
	}
	return false, tx.Commit()
}
