// A database migrated before migrations were per feature opens with the
// migration sets: nothing is applied again, its tables and indexes stay
// as they were, and its rows of schema_migrations move to their sets.
package ingest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// legacyMigrate does to the database at url (dataDir's SQLite file when
// url is "") what brain's runner did before migration sets: the five
// migrations of testdata/legacyschema (a frozen copy of that layout), one
// numbered sequence recorded by version alone, each in a transaction with
// its Go step.
func legacyMigrate(t *testing.T, d store.Dialect, url, dataDir string) {
	t.Helper()
	ctx := context.Background()
	driver, dsn := "pgx", url
	if d == store.SQLite {
		driver, dsn = "sqlite", "file:"+store.SQLitePath(dataDir)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	dir := path.Join("testdata/legacyschema", string(d))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		b, err := os.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(e.Name()[len("0001_"):], ".sql")
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, string(b)); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if step := ingest.Migrations.Steps[name]; step != nil {
			if err := step(ctx, tx, d); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", i+1, name, 1000+i); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// schemaOf describes the database's tables, columns and indexes, but for
// schema_migrations and River's.
func schemaOf(t *testing.T, db *store.DB) []string {
	t.Helper()
	q := `SELECT type || ' ' || name || ': ' || COALESCE(sql, '') FROM sqlite_master
		WHERE name NOT LIKE 'river%' AND name NOT LIKE 'schema_migrations%' AND name NOT LIKE 'sqlite_%' ORDER BY type, name`
	if db.Dialect == store.Postgres {
		q = `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema()
			AND table_name NOT LIKE 'river%' AND table_name NOT LIKE 'schema_migrations%'
			UNION ALL SELECT 'index ' || indexname || ': ' || replace(indexdef, current_schema() || '.', '') FROM pg_indexes WHERE schemaname = current_schema()
			AND tablename NOT LIKE 'river%' AND tablename NOT LIKE 'schema_migrations%'
			UNION ALL SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ': ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
			AND conrelid::regclass::text NOT LIKE 'river%' AND conrelid::regclass::text NOT LIKE 'schema_migrations%'
			ORDER BY 1`
	}
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLegacySchemaOpens(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			url, dir := storetest.URL(t, d), t.TempDir()
			legacyMigrate(t, d, url, dir)
			db, err := store.Open(ctx, url, dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			before := schemaOf(t, db)
			if len(before) < 10 {
				t.Fatalf("the legacy schema: %q, too small to be the one brain made", before)
			}
			if n, err := db.Migrate(ctx, ingest.Migrations); err != nil || n != 0 {
				t.Fatalf("Migrate over the legacy schema = %d, %v; want nothing applied", n, err)
			}
			if after := schemaOf(t, db); !slices.Equal(after, before) {
				t.Fatalf("the schema changed:\nbefore %q\nafter  %q", before, after)
			}
			rows, err := db.QueryContext(ctx, "SELECT set_name, version, name, applied_at FROM schema_migrations ORDER BY applied_at")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var set, name string
				var v, at int
				if err := rows.Scan(&set, &v, &name, &at); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprint(set, " ", v, " ", name, " ", at))
			}
			want := []string{"platform 1 auth 1000", "ingest 1 memory 1001", "ingest 2 quotas 1002", "ingest 3 search 1003", "ingest 4 jobs_failed 1004"}
			if !slices.Equal(got, want) {
				t.Fatalf("schema_migrations = %q, want %q", got, want)
			}

			// The sets make, on a fresh database, the schema the single
			// sequence made.
			if fresh := schemaOf(t, storetest.Open(t, d)); !slices.Equal(fresh, before) {
				t.Fatalf("a fresh database's schema:\n%q\nthe legacy one's:\n%q", fresh, before)
			}
		})
	}
}
