package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river/rivermigrate"
)

// migrateQueue applies River's migrations, the tables of the job queue
// (see queue.go), after brain's own, on conn, which Migrate holds.
//
// River's tables live beside brain's: in the SQLite file, or in the
// PostgreSQL schema the connection's search_path names first (River's
// client and migrations leave table names unqualified when no schema is
// configured, as here), so a fresh schema per test holds its own queue.
//
// River's Migrator.Migrate reads the applied versions once, then applies
// the missing ones each in a transaction of its own: two replicas starting
// at once would both apply the first. So each version is applied here in
// a transaction on conn that re-reads the applied versions first, as
// migrateOne does: on PostgreSQL, conn holds Migrate's advisory lock, so
// replicas take turns; on SQLite, the transaction's BEGIN IMMEDIATE takes
// the write lock, so the second replica reads what the first applied.
// MigrateTx is deprecated because several migrations in one transaction
// can fail on PostgreSQL; MaxSteps: 1 applies one per transaction, as
// Migrate does.
func (db *DB) migrateQueue(ctx context.Context, conn *sql.Conn) error {
	m, err := rivermigrate.New(db.riverDriver(), &rivermigrate.Config{
		Logger: slog.New(slog.DiscardHandler), // an error is returned; progress is not worth a line
	})
	if err != nil {
		return fmt.Errorf("store: migrate the job queue: %w", err)
	}
	for {
		done, err := migrateQueueOne(ctx, conn, m)
		if err != nil {
			return fmt.Errorf("store: migrate the job queue: %w", err)
		}
		if done {
			return nil
		}
	}
}

// migrateQueueOne applies River's next missing migration, if any.
func migrateQueueOne(ctx context.Context, conn *sql.Conn, m *rivermigrate.Migrator[*sql.Tx]) (done bool, err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	//lint:ignore SA1019 one version per transaction, re-read under the lock (see migrateQueue)
	res, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
	if err != nil {
		return false, err
	}
	if len(res.Versions) == 0 {
		return true, nil
	}
	return false, tx.Commit()
}
