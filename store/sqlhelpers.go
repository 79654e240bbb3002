package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/page"
	"github.com/jackc/pgx/v5/pgconn"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Millis is t as the databases keep it: Unix ms, 0 for the zero time.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// FromMillis is the time Millis kept, in UTC.
func FromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// IsUnique reports a unique-constraint violation on either dialect.
func IsUnique(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// NotFound is err, or ErrNotFound for sql.ErrNoRows.
func NotFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// AffectedOne is err, or ErrNotFound when the statement changed no row.
func AffectedOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Wrap says what failed: "store: <what>: <err>"; nil stays nil.
func Wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

// PageAfter is the condition (and args) on the rows after c in a list
// ordered "<alias>.created_at DESC, <alias>.id"; "" for the zero Cursor.
func PageAfter(alias string, c page.Cursor, args []any) (string, []any) {
	if c == (page.Cursor{}) {
		return "", args
	}
	t, id := fmt.Sprintf("$%d", len(args)+1), fmt.Sprintf("$%d", len(args)+2)
	cond := fmt.Sprintf(" AND (%[1]s.created_at < %[2]s OR (%[1]s.created_at = %[2]s AND %[1]s.id > %[3]s))", alias, t, id)
	return cond, append(args, Millis(c.CreatedAt), c.ID)
}
