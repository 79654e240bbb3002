package store

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/brain-template/brain/auth"
)

// AuthStore keeps users, sessions and API keys: auth.Store.
type AuthStore struct{ db *DB }

// NewAuthStore returns the auth store of db.
func NewAuthStore(db *DB) *AuthStore { return &AuthStore{db: db} }

var _ auth.Store = (*AuthStore)(nil)

// CreateUser adds u; ErrConflict when the username is taken.
func (s *AuthStore) CreateUser(ctx context.Context, u auth.User) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO users (id, username, password_hash, created_at, is_admin) VALUES ($1, $2, $3, $4, $5)",
		u.ID, u.Username, u.PasswordHash, Millis(u.CreatedAt), u.Admin)
	if IsUnique(err) {
		return auth.ErrConflict
	}
	return Wrap("create user", err)
}

const userCols = "u.id, u.username, u.password_hash, u.created_at, u.is_admin"

type scanner interface{ Scan(...any) error }

func scanUser(sc scanner, extra ...any) (auth.User, error) {
	var u auth.User
	var created int64
	err := sc.Scan(append([]any{&u.ID, &u.Username, &u.PasswordHash, &created, &u.Admin}, extra...)...)
	u.CreatedAt = FromMillis(created)
	return u, NotFound(err)
}

// UserByID returns the user with id, or ErrNotFound.
func (s *AuthStore) UserByID(ctx context.Context, id string) (auth.User, error) {
	return scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users u WHERE u.id = $1", id))
}

// UserByUsername returns the user named username, or ErrNotFound.
func (s *AuthStore) UserByUsername(ctx context.Context, username string) (auth.User, error) {
	return scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users u WHERE u.username = $1", username))
}

// CountUsers returns how many users there are.
func (s *AuthStore) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM users").Scan(&n)
	return n, Wrap("count users", err)
}

func (s *AuthStore) inTx(ctx context.Context, what string, f func(tx *Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Wrap(what, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return Wrap(what, err)
	}
	return Wrap(what, tx.Commit())
}

// SetPasswordAndEndSessions sets the user's password hash and deletes the
// user's sessions but keepTokenHash's.
func (s *AuthStore) SetPasswordAndEndSessions(ctx context.Context, userID, hash, keepTokenHash string) error {
	return s.inTx(ctx, "set password", func(tx *Tx) error {
		if err := AffectedOne(tx.ExecContext(ctx, "UPDATE users SET password_hash = $1 WHERE id = $2", hash, userID)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE user_id = $1 AND token_hash <> $2", userID, keepTokenHash)
		return err
	})
}

// lockUser serializes the capped inserts of one user within tx (SQLite's
// BEGIN IMMEDIATE has already) and checks that the user exists.
func (s *AuthStore) lockUser(ctx context.Context, tx *Tx, userID string) error {
	q := "SELECT id FROM users WHERE id = $1"
	if s.db.Dialect == Postgres {
		q += " FOR NO KEY UPDATE"
	}
	var id string
	return NotFound(tx.QueryRowContext(ctx, q, userID).Scan(&id))
}

// CreateSession inserts se and deletes the user's oldest sessions beyond
// max, returning their token hashes.
func (s *AuthStore) CreateSession(ctx context.Context, se auth.Session, max int) (evicted []string, err error) {
	err = s.inTx(ctx, "create session", func(tx *Tx) error {
		if err := s.lockUser(ctx, tx, se.UserID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `DELETE FROM sessions WHERE user_id = $1 AND token_hash NOT IN (
		SELECT token_hash FROM sessions WHERE user_id = $1 ORDER BY created_at DESC, token_hash DESC LIMIT $2)
		RETURNING token_hash`, se.UserID, max-1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				return err
			}
			evicted = append(evicted, h)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)",
			se.TokenHash, se.UserID, Millis(se.CreatedAt), Millis(se.ExpiresAt), Millis(se.LastSeenAt))
		if IsUnique(err) {
			return auth.ErrConflict
		}
		return err
	})
	return evicted, err
}

// SessionByTokenHash returns the session with tokenHash and its user.
func (s *AuthStore) SessionByTokenHash(ctx context.Context, tokenHash string) (auth.Session, auth.User, error) {
	se := auth.Session{TokenHash: tokenHash}
	var created, expires, seen int64
	u, err := scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+", s.user_id, s.created_at, s.expires_at, s.last_seen_at FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1", tokenHash),
		&se.UserID, &created, &expires, &seen)
	se.CreatedAt, se.ExpiresAt, se.LastSeenAt = FromMillis(created), FromMillis(expires), FromMillis(seen)
	return se, u, err
}

// TouchSessions moves sessions' last-seen times forward, by token hash.
func (s *AuthStore) TouchSessions(ctx context.Context, seen map[string]time.Time) error {
	return s.touch(ctx, "touch sessions", "UPDATE sessions SET last_seen_at = $1 WHERE token_hash = $2 AND last_seen_at < $1", seen)
}

// DeleteSession deletes the session with tokenHash, if any.
func (s *AuthStore) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE token_hash = $1", tokenHash)
	return Wrap("delete session", err)
}

// DeleteExpiredSessions deletes the sessions ended or idle at now.
func (s *AuthStore) DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2", Millis(now), Millis(now.Add(-idle)))
	if err != nil {
		return 0, Wrap("delete expired sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CreateAPIKey inserts k unless the user has max keys.
func (s *AuthStore) CreateAPIKey(ctx context.Context, k auth.APIKey, max int) error {
	return s.inTx(ctx, "create api key", func(tx *Tx) error {
		if err := s.lockUser(ctx, tx, k.UserID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_keys WHERE user_id = $1", k.UserID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return auth.ErrTooMany
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO api_keys (id, user_id, name, prefix, key_hash, created_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
			k.ID, k.UserID, k.Name, k.Prefix, k.KeyHash, Millis(k.CreatedAt), Millis(k.LastUsedAt))
		if IsUnique(err) {
			return auth.ErrConflict
		}
		return err
	})
}

const keyCols = "k.id, k.user_id, k.name, k.prefix, k.key_hash, k.created_at, k.last_used_at"

func scanKey(sc scanner, extra ...any) (auth.APIKey, error) {
	var k auth.APIKey
	var created, used int64
	err := sc.Scan(append([]any{&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.KeyHash, &created, &used}, extra...)...)
	k.CreatedAt, k.LastUsedAt = FromMillis(created), FromMillis(used)
	return k, NotFound(err)
}

// APIKeyByHash returns the key with keyHash and its user.
func (s *AuthStore) APIKeyByHash(ctx context.Context, keyHash string) (auth.APIKey, auth.User, error) {
	var u auth.User
	var created int64
	k, err := scanKey(s.db.QueryRowContext(ctx, "SELECT "+keyCols+", "+userCols+" FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1", keyHash),
		&u.ID, &u.Username, &u.PasswordHash, &created, &u.Admin)
	u.CreatedAt = FromMillis(created)
	return k, u, err
}

// ListAPIKeys returns a page of the user's keys, newest first.
func (s *AuthStore) ListAPIKeys(ctx context.Context, userID string, after auth.Cursor, limit int) ([]auth.APIKey, error) {
	cond, args := PageAfter("k", after, []any{userID, limit})
	rows, err := s.db.QueryContext(ctx, "SELECT "+keyCols+" FROM api_keys k WHERE k.user_id = $1"+cond+" ORDER BY k.created_at DESC, k.id LIMIT $2", args...)
	if err != nil {
		return nil, Wrap("list api keys", err)
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
	return keys, Wrap("list api keys", rows.Err())
}

// DeleteAPIKey deletes the user's key id.
func (s *AuthStore) DeleteAPIKey(ctx context.Context, userID, id string) error {
	return AffectedOne(s.db.ExecContext(ctx, "DELETE FROM api_keys WHERE id = $1 AND user_id = $2", id, userID))
}

// TouchAPIKeys moves keys' last-used times forward, by key id.
func (s *AuthStore) TouchAPIKeys(ctx context.Context, used map[string]time.Time) error {
	return s.touch(ctx, "touch api keys", "UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND last_used_at < $1", used)
}

// touchBatch bounds the updates of one transaction, to end within Timeout.
const touchBatch = 500

// touch runs update ($1 a time, $2 a key) for every entry of times.
func (s *AuthStore) touch(ctx context.Context, what, update string, times map[string]time.Time) error {
	for batch := range slices.Chunk(slices.Collect(maps.Keys(times)), touchBatch) {
		err := s.inTx(ctx, what, func(tx *Tx) error {
			for _, key := range batch {
				if _, err := tx.ExecContext(ctx, update, Millis(times[key]), key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
