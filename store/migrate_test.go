// Tests of migration sets: the platform's and features', their
// bookkeeping, a removed feature and a newer schema.

package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// notes is a feature's migration set: a table, then a column filled by a
// Go step.
func notes() store.Migrations {
	files := fstest.MapFS{}
	for _, d := range []string{"sqlite", "postgres"} {
		files[d+"/0001_notes.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);")}
		files[d+"/0002_words.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE notes ADD COLUMN words INTEGER;")}
	}
	return store.Migrations{Name: "notes", FS: files, Steps: map[string]func(context.Context, *sql.Tx, store.Dialect) error{
		"words": func(ctx context.Context, tx *sql.Tx, _ store.Dialect) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO notes (id, body, words) VALUES ('n0', 'written by the step', 4)")
			return err
		},
	}}
}

// openEmpty opens a new, unmigrated database of dialect d.
func openEmpty(t *testing.T, d store.Dialect) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), storetest.URL(t, d), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// bookkeeping lists the rows of schema_migrations of a set as "set
// version name" lines.
func bookkeeping(t *testing.T, db *store.DB, set string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "SELECT set_name, version, name FROM schema_migrations WHERE set_name = $1 ORDER BY version", set)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var set, name string
		var v int
		if err := rows.Scan(&set, &v, &name); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(set, " ", v, " ", name))
	}
	return out
}

func mustExec(t *testing.T, db *store.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A fresh database gets the platform's set, then the feature's, its step
// run; a database keeps the rows of a set the binary no longer holds; a
// set the database holds newer than the binary stops Migrate.
func TestMigrationSets(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := openEmpty(t, d)
		p := store.PlatformMigrations(d)
		if n, err := db.Migrate(ctx, notes()); err != nil || n != p+2 {
			t.Fatalf("Migrate on a fresh database = %d, %v; want %d (the platform's, then notes 2)", n, err, p+2)
		}
		if got, want := bookkeeping(t, db, "notes"), []string{"notes 1 notes", "notes 2 words"}; !slices.Equal(got, want) {
			t.Fatalf("schema_migrations of notes = %q, want %q", got, want)
		}
		if got := bookkeeping(t, db, "platform"); len(got) != p || got[0] != "platform 1 auth" {
			t.Fatalf("schema_migrations of the platform = %q, want %d from 1 auth", got, p)
		}
		var words int
		if err := db.QueryRowContext(ctx, "SELECT words FROM notes WHERE id = 'n0'").Scan(&words); err != nil || words != 4 {
			t.Fatalf("the step's row: %d, %v", words, err)
		}
		if n, err := db.Migrate(ctx, notes()); err != nil || n != 0 {
			t.Fatalf("Migrate again = %d, %v; want 0, nil", n, err)
		}
		if got := store.SchemaVersions(d, notes()); got != fmt.Sprintf("platform %d, notes 2", p) {
			t.Fatalf("SchemaVersions = %q", got)
		}

		// A feature since removed: its rows stay, and are no matter.
		mustExec(t, db, "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ('gone', 7, 'old', 0)")
		if n, err := db.Migrate(ctx, notes()); err != nil || n != 0 {
			t.Fatalf("Migrate beside an unknown set's rows = %d, %v; want 0, nil", n, err)
		}
		if n, err := db.Migrate(ctx); err != nil || n != 0 {
			t.Fatalf("Migrate without the notes set = %d, %v; want 0, nil", n, err)
		}

		// A newer brain migrated the notes set further.
		mustExec(t, db, "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ('notes', 3, 'future', 0)")
		var tooNew *store.ErrSchemaTooNew
		if _, err := db.Migrate(ctx, notes()); !errors.As(err, &tooNew) || *tooNew != (store.ErrSchemaTooNew{Set: "notes", Database: 3, Binary: 2}) {
			t.Fatalf("Migrate on a newer notes set = %v, want ErrSchemaTooNew of notes at 3, binary 2", err)
		}
	})
}

// MigrateBefore stops before the named migration of the named set, and
// Migrate goes on from there.
func TestMigrateBefore(t *testing.T) {
	eachDialect(t, func(t *testing.T, d store.Dialect) {
		ctx := context.Background()
		db := openEmpty(t, d)
		if err := db.MigrateBefore(ctx, "notes", "words", notes()); err != nil {
			t.Fatal(err)
		}
		if got, want := bookkeeping(t, db, "notes"), []string{"notes 1 notes"}; !slices.Equal(got, want) {
			t.Fatalf("schema_migrations of notes = %q, want %q", got, want)
		}
		if n, err := db.Migrate(ctx, notes()); err != nil || n != 1 {
			t.Fatalf("Migrate after MigrateBefore = %d, %v; want the one left", n, err)
		}
		if err := db.MigrateBefore(ctx, "notes", "nothing", notes()); err == nil {
			t.Fatal("MigrateBefore a migration that is not there: no error")
		}
	})
}

// Sets that cannot be applied are refused before the database is touched.
func TestBadMigrationSets(t *testing.T) {
	ctx := context.Background()
	db := openEmpty(t, store.SQLite)
	stray := notes()
	stray.Steps["typo"] = stray.Steps["words"]
	gap := notes()
	gap.FS.(fstest.MapFS)["sqlite/0004_later.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;")}
	for name, sets := range map[string][]store.Migrations{
		"two sets of one name":    {notes(), notes()},
		"the platform's name":     {{Name: store.PlatformSet, FS: notes().FS}},
		"a step of no migration":  {stray},
		"a gap in the numbers":    {gap},
		"no directory for sqlite": {{Name: "empty", FS: fstest.MapFS{}}},
		"a set without a name":    {{FS: notes().FS}},
	} {
		if _, err := db.Migrate(ctx, sets...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("schema_migrations after refused sets: %d, %v; want none", n, err)
	}
}
