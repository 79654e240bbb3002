package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache runs a DB's statements (not a transaction's, which are
// fewer) through prepared statements, one per query text, kept for the
// DB's life: database/sql prepares each on a
// connection the first time it runs there, and reuses it after. SQLite's
// driver otherwise parses and plans a query anew at every call, a tenth
// of the CPU of an idempotent replay, a request of a few small queries
// (BENCHMARKS.md). PostgreSQL's driver (pgx) keeps its own cache and
// needs none.
//
// Queries are few and fixed in this package, but some are built from
// parts; past maxCachedStmts the rest run unprepared, so the cache stays
// bounded whatever is asked of it.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// maxCachedStmts bounds a stmtCache.
const maxCachedStmts = 256

// stmt is query's prepared statement, preparing it if need be; nil when
// the cache is full or query does not prepare (running it unprepared then
// reports why).
func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.stmts[query]
	full := len(c.stmts) >= maxCachedStmts
	c.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if had, ok := c.stmts[query]; ok { // prepared meanwhile by another call
		st.Close()
		return had
	}
	c.stmts[query] = st
	return st
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.db.ExecContext(ctx, query, args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

// close closes the statements.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}
