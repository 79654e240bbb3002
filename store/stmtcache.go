package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache runs a SQLite DB's statements through prepared statements
// kept for its life (BENCHMARKS.md); pgx keeps its own.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

const maxCachedStmts = 256

// stmt is query's prepared statement, or nil.
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
	if had, ok := c.stmts[query]; ok {
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

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		st.Close()
		delete(c.stmts, q)
	}
}
