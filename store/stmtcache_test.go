package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The cache answers as the database does, keeps at most maxCachedStmts
// statements, and runs the rest (and what does not prepare) unprepared.
func TestStmtCache(t *testing.T) {
	ctx := context.Background()
	db, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	const count = "SELECT COUNT(*) FROM t WHERE n >= $1"
	for i := range maxCachedStmts + 10 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO t (n) VALUES (%d)", i)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			for range 2 { // prepared, then from the cache
				var n int
				if err := db.QueryRowContext(ctx, count, 0).Scan(&n); err != nil || n != 1 {
					t.Fatalf("count = %d, %v; want 1", n, err)
				}
			}
			if db.stmts.stmts[count] == nil {
				t.Fatal("the query is not cached")
			}
		}
	}
	if n := len(db.stmts.stmts); n != maxCachedStmts {
		t.Fatalf("%d statements cached, want the bound, %d", n, maxCachedStmts)
	}
	var n int // past the bound, a new query runs unprepared
	if err := db.QueryRowContext(ctx, count+" AND n < $2", 10, 20).Scan(&n); err != nil || n != 10 {
		t.Fatalf("count = %d, %v; want 10", n, err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO nowhere VALUES (1)"); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("a statement that does not prepare: %v, want the database's error", err)
	}
}
