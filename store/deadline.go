package store

import (
	"context"
	"database/sql"
	"strings"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// runner is what *sql.DB and *sql.Tx have in common.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// bounded runs statements, each under the deadline bound puts on its context.
type bounded struct {
	run   runner
	bound func(context.Context) (context.Context, context.CancelFunc)
}

// ExecContext runs a statement that returns no rows.
func (b bounded) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, span := statement(ctx, query)
	defer span.End()
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.run.ExecContext(ctx, query, args...)
}

// QueryContext runs a query; the deadline holds until the rows are closed.
func (b bounded) QueryContext(ctx context.Context, query string, args ...any) (*Rows, error) {
	ctx, span := statement(ctx, query)
	ctx, cancel := b.bound(ctx)
	rows, err := b.run.QueryContext(ctx, query, args...)
	if err != nil {
		cancel()
		span.End()
		return nil, err
	}
	return &Rows{Rows: rows, cancel: cancel, span: span}, nil
}

// QueryRowContext runs a query for at most one row; the deadline holds
// until Scan.
func (b bounded) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	ctx, span := statement(ctx, query)
	ctx, cancel := b.bound(ctx)
	return &Row{row: b.run.QueryRowContext(ctx, query, args...), cancel: cancel, span: span}
}

// Rows are a query's results (see [sql.Rows]).
type Rows struct {
	*sql.Rows
	cancel context.CancelFunc
	span   trace.Span
}

// Close closes the rows and ends their deadline.
func (r *Rows) Close() error {
	defer r.span.End()
	defer r.cancel()
	return r.Rows.Close()
}

// Row is a query's single row (see [sql.Row]).
type Row struct {
	row    *sql.Row
	cancel context.CancelFunc
	span   trace.Span
}

// Scan copies the row's columns into dest, then ends the deadline.
func (r *Row) Scan(dest ...any) error {
	defer r.span.End()
	defer r.cancel()
	return r.row.Scan(dest...)
}

// statement starts a statement's span, named by its first word, when ctx
// is in a recording span (a traced request or job); else it returns ctx and
// a span that records nothing.
func statement(ctx context.Context, query string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	op := strings.TrimSpace(query)
	if i := strings.IndexFunc(op, unicode.IsSpace); i > 0 {
		op = op[:i]
	}
	return parent.TracerProvider().Tracer("store").Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.query.text", query)))
}

var noSpan = trace.SpanFromContext(context.Background())

// WithTimeout is ctx bounded by db.Timeout.
func (db *DB) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, db.Timeout)
}

// PingContext checks that the database answers.
func (db *DB) PingContext(ctx context.Context) error {
	ctx, cancel := db.WithTimeout(ctx)
	defer cancel()
	return db.sql.PingContext(ctx)
}

// Tx is a transaction whose statements and Commit end within Timeout of
// BeginTx. End it with Commit or Rollback.
type Tx struct {
	bounded
	tx     *sql.Tx
	cancel context.CancelFunc
}

// BeginTx starts a transaction (on SQLite, BEGIN IMMEDIATE).
func (db *DB) BeginTx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) {
	ctx, cancel := db.WithTimeout(ctx)
	tx, err := db.sql.BeginTx(ctx, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	return &Tx{
		bounded: bounded{run: tx, bound: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(ctx, deadline)
		}},
		tx: tx, cancel: cancel,
	}, nil
}

// Commit commits the transaction.
func (tx *Tx) Commit() error {
	defer tx.cancel()
	return tx.tx.Commit()
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback() error {
	defer tx.cancel()
	return tx.tx.Rollback()
}
