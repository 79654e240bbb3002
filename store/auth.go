package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/jackc/pgx/v5/pgconn"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// AuthStore keeps users, sessions and API keys. It implements auth.Store on
// both dialects with the same SQL ($n placeholders work on both).
type AuthStore struct{ db *DB }

// NewAuthStore returns the auth store of db.
func NewAuthStore(db *DB) *AuthStore { return &AuthStore{db: db} }

var _ auth.Store = (*AuthStore)(nil)

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// isUnique reports a unique-constraint violation on either dialect.
func isUnique(err error) bool {
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

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return auth.ErrNotFound
	}
	return err
}

func (s *AuthStore) CreateUser(ctx context.Context, u auth.User) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO users (id, username, password_hash, created_at) VALUES ($1, $2, $3, $4)",
		u.ID, u.Username, u.PasswordHash, ms(u.CreatedAt))
	if isUnique(err) {
		return auth.ErrConflict
	}
	return wrap("create user", err)
}

const userCols = "u.id, u.username, u.password_hash, u.created_at"

func scanUser(sc interface{ Scan(...any) error }, extra ...any) (auth.User, error) {
	var u auth.User
	var created int64
	err := sc.Scan(append([]any{&u.ID, &u.Username, &u.PasswordHash, &created}, extra...)...)
	u.CreatedAt = fromMS(created)
	return u, notFound(err)
}

func (s *AuthStore) UserByID(ctx context.Context, id string) (auth.User, error) {
	return scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users u WHERE u.id = $1", id))
}

func (s *AuthStore) UserByUsername(ctx context.Context, username string) (auth.User, error) {
	return scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users u WHERE u.username = $1", username))
}

func (s *AuthStore) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM users").Scan(&n)
	return n, wrap("count users", err)
}

func (s *AuthStore) SetPasswordAndEndSessions(ctx context.Context, userID, hash, keepTokenHash string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("set password", err)
	}
	defer tx.Rollback()
	if err := affectedOne(tx.ExecContext(ctx, "UPDATE users SET password_hash = $1 WHERE id = $2", hash, userID)); err != nil {
		return wrap("set password", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2", userID, keepTokenHash); err != nil {
		return wrap("end sessions", err)
	}
	return wrap("set password", tx.Commit())
}

func (s *AuthStore) CreateSession(ctx context.Context, se auth.Session) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)",
		se.TokenHash, se.UserID, ms(se.CreatedAt), ms(se.ExpiresAt), ms(se.LastSeenAt))
	if isUnique(err) {
		return auth.ErrConflict
	}
	return wrap("create session", err)
}

func (s *AuthStore) SessionByTokenHash(ctx context.Context, tokenHash string) (auth.Session, auth.User, error) {
	se := auth.Session{TokenHash: tokenHash}
	var created, expires, seen int64
	u, err := scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+", s.user_id, s.created_at, s.expires_at, s.last_seen_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1", tokenHash),
		&se.UserID, &created, &expires, &seen)
	se.CreatedAt, se.ExpiresAt, se.LastSeenAt = fromMS(created), fromMS(expires), fromMS(seen)
	return se, u, err
}

func (s *AuthStore) TouchSession(ctx context.Context, tokenHash string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE sessions SET last_seen_at = $1 WHERE token_hash = $2 AND last_seen_at < $1", ms(at), tokenHash)
	return wrap("touch session", err)
}

func (s *AuthStore) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE token_hash = $1", tokenHash)
	return wrap("delete session", err)
}

func (s *AuthStore) DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2", ms(now), ms(now.Add(-idle)))
	if err != nil {
		return 0, wrap("delete expired sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *AuthStore) CreateAPIKey(ctx context.Context, k auth.APIKey) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		k.ID, k.UserID, k.Name, k.Prefix, k.KeyHash, ms(k.CreatedAt), ms(k.LastUsedAt))
	if isUnique(err) {
		return auth.ErrConflict
	}
	return wrap("create api key", err)
}

const keyCols = "k.id, k.user_id, k.name, k.prefix, k.key_hash, k.created_at, k.last_used_at"

func scanKey(sc interface{ Scan(...any) error }, extra ...any) (auth.APIKey, error) {
	var k auth.APIKey
	var created, used int64
	err := sc.Scan(append([]any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.KeyHash, &created, &used}, extra...)...)
	k.CreatedAt, k.LastUsedAt = fromMS(created), fromMS(used)
	return k, notFound(err)
}

func (s *AuthStore) APIKeyByHash(ctx context.Context, keyHash string) (auth.APIKey, auth.User, error) {
	var u auth.User
	var created int64
	k, err := scanKey(s.db.QueryRowContext(ctx, "SELECT "+keyCols+", "+userCols+" FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1", keyHash),
		&u.ID, &u.Username, &u.PasswordHash, &created)
	u.CreatedAt = fromMS(created)
	return k, u, err
}

func (s *AuthStore) ListAPIKeys(ctx context.Context, userID string) ([]auth.APIKey, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+keyCols+" FROM api_keys k WHERE k.user_id = $1 ORDER BY k.created_at DESC, k.id", userID)
	if err != nil {
		return nil, wrap("list api keys", err)
	}
	defer rows.Close()
	keys := []auth.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, wrap("list api keys", rows.Err())
}

func (s *AuthStore) DeleteAPIKey(ctx context.Context, userID, id string) error {
	return affectedOne(s.db.ExecContext(ctx, "DELETE FROM api_keys WHERE id = $1 AND user_id = $2", id, userID))
}

func (s *AuthStore) TouchAPIKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("touch api keys", err)
	}
	defer tx.Rollback()
	for id, at := range used {
		if _, err := tx.ExecContext(ctx, "UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND last_used_at < $1", ms(at), id); err != nil {
			return wrap("touch api keys", err)
		}
	}
	return wrap("touch api keys", tx.Commit())
}

func affectedOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return auth.ErrNotFound
	}
	return nil
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", what, err)
}
