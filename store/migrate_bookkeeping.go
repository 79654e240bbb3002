// schema_migrations itself: made on a fresh database, and rebuilt from
// the one sequence brain numbered before migrations were per set.
package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/brain-template/brain/internal/product"
)

// createBookkeeping makes schema_migrations: one row per applied
// migration, keyed by its set and its version in the set.
const createBookkeeping = `CREATE TABLE schema_migrations (
	set_name   TEXT NOT NULL,
	version    INTEGER NOT NULL,
	name       TEXT NOT NULL,
	applied_at BIGINT NOT NULL,
	PRIMARY KEY (set_name, version))`

// A legacyRow is where a migration of the single sequence brain numbered
// before migration sets belongs now.
type legacyRow struct {
	name, set string
	version   int
}

// legacyRows maps the versions of that single sequence to their sets:
// the account tables are the platform's, the rest the memory example's.
var legacyRows = map[int]legacyRow{
	1: {"auth", PlatformSet, 1},
	2: {"memory", "ingest", 1},
	3: {"quotas", "ingest", 2},
	4: {"search", "ingest", 3},
	5: {"jobs_failed", "ingest", 4},
}

// migrateBookkeeping makes schema_migrations if it is not there, and
// rebuilds it keyed by set if it is the single sequence's (version alone
// as its key), in one transaction that reads it under the write lock.
// A row of that sequence brain did not number (a fork's own migration)
// stops it: such a row must be mapped to its set by hand.
func (db *DB) migrateBookkeeping(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	table, column := db.bookkeepingShape(ctx, tx)
	switch {
	case table.err != nil:
		return fmt.Errorf("store: migrate: %w", table.err)
	case table.n == 0:
		if _, err := tx.ExecContext(ctx, createBookkeeping); err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
	case column.err != nil:
		return fmt.Errorf("store: migrate: %w", column.err)
	case column.n == 0:
		if err := rebuildBookkeeping(ctx, tx); err != nil {
			return fmt.Errorf("store: migrate: schema_migrations by set: %w", err)
		}
	default:
		return nil
	}
	return tx.Commit()
}

type shapeCount struct {
	n   int
	err error
}

// bookkeepingShape counts schema_migrations tables (0 or 1) and their
// set_name columns in the connection's schema.
func (db *DB) bookkeepingShape(ctx context.Context, tx *sql.Tx) (table, column shapeCount) {
	tableQ := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	columnQ := "SELECT COUNT(*) FROM pragma_table_info('schema_migrations') WHERE name = 'set_name'"
	if db.Dialect == Postgres {
		tableQ = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
		columnQ = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'set_name'"
	}
	table.err = tx.QueryRowContext(ctx, tableQ).Scan(&table.n)
	if table.err == nil && table.n > 0 {
		column.err = tx.QueryRowContext(ctx, columnQ).Scan(&column.n)
	}
	return table, column
}

// rebuildBookkeeping replaces the single sequence's schema_migrations by
// one keyed by set, each row mapped by legacyRows and checked by name.
func rebuildBookkeeping(ctx context.Context, tx *sql.Tx) error {
	type row struct {
		version   int
		name      string
		appliedAt int64
	}
	rs, err := tx.QueryContext(ctx, "SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
	if err != nil {
		return err
	}
	var rows []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.version, &r.name, &r.appliedAt); err != nil {
			rs.Close()
			return err
		}
		rows = append(rows, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for _, stmt := range []string{"DROP TABLE schema_migrations", createBookkeeping} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	for _, r := range rows {
		to, ok := legacyRows[r.version]
		if !ok || to.name != r.name {
			return fmt.Errorf("migration %d (%s) is not one "+product.Name+" numbered before migration sets: map its row to its set by hand", r.version, r.name)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ($1, $2, $3, $4)",
			to.set, to.version, r.name, r.appliedAt); err != nil {
			return err
		}
	}
	return nil
}
