package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river/rivermigrate"
)

// migrateQueue applies River's migrations on conn, under Migrate's lock,
// each in a transaction that re-reads the applied versions first.
func (db *DB) migrateQueue(ctx context.Context, conn *sql.Conn) error {
	m, err := rivermigrate.New(db.riverDriver(), &rivermigrate.Config{
		Logger: slog.New(slog.DiscardHandler),
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
