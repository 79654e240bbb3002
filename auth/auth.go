package auth

import (
	"context"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/page"
)

// Errors a [Store] returns: the kinds of package fault themselves, which
// every store returns and api maps to statuses. Any other error from a
// store means it failed (down, too slow); the [Service] passes it on
// marked [ErrUnavailable].
var (
	ErrNotFound = fault.ErrNotFound
	ErrConflict = fault.ErrConflict // a username or key hash taken
	// ErrTooMany: the user has as many as the cap allows (of API keys).
	ErrTooMany = fault.ErrTooMany
)

// A User is someone who can log in. Each user's data is private to them.
type User struct {
	ID           string
	Username     string
	PasswordHash string // argon2id, PHC string form
	CreatedAt    time.Time
	// Admin may call the operations of access api.Admin. The first user
	// ever created is one.
	Admin bool
}

// A Session is a logged-in browser. Only the SHA-256 of its token is kept.
type Session struct {
	TokenHash  string // hex
	UserID     string
	CreatedAt  time.Time
	ExpiresAt  time.Time // absolute end of life
	LastSeenAt time.Time // for the idle timeout; written at most once per TouchInterval
}

// An APIKey lets a program call the API as its user. Only the SHA-256 of
// the key is kept; Prefix is shown so a person can tell keys apart.
type APIKey struct {
	ID         string
	UserID     string
	Name       string
	Prefix     string
	KeyHash    string // hex
	CreatedAt  time.Time
	LastUsedAt time.Time // zero until first use
}

// A Cursor is a place in a list ordered newest first (created_at
// descending, then id ascending): the created time and id of the last item
// a page showed. The next page starts after it. The zero Cursor is the
// start of the list. It is [page.Cursor], every list's.
type Cursor = page.Cursor

// Store keeps users, sessions and API keys. Package store implements it on
// SQLite and PostgreSQL; one test suite (storetest) holds both to it.
//
// Every call must end in bounded time even when ctx has no deadline
// (package store bounds each with DB.Timeout): the Service's background
// writes rely on it to end when the database does not answer.
type Store interface {
	CreateUser(ctx context.Context, u User) error // ErrConflict when the username is taken
	UserByID(ctx context.Context, id string) (User, error)
	UserByUsername(ctx context.Context, username string) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// SetPasswordAndEndSessions sets the user's password hash and deletes
	// every session of theirs but keepTokenHash's, in one transaction: both
	// happen or neither. ErrNotFound when there is no such user.
	SetPasswordAndEndSessions(ctx context.Context, userID, hash, keepTokenHash string) error

	// CreateSession inserts s and, in the same transaction, deletes the
	// user's oldest sessions (by creation) so that at most max remain, s
	// included. It returns the token hashes of the sessions it deleted.
	CreateSession(ctx context.Context, s Session, max int) (evicted []string, err error)
	// SessionByTokenHash returns the session and its user.
	SessionByTokenHash(ctx context.Context, tokenHash string) (Session, User, error)
	// TouchSessions records last-seen times (by token hash) in one write.
	TouchSessions(ctx context.Context, seen map[string]time.Time) error
	DeleteSession(ctx context.Context, tokenHash string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error)

	// CreateAPIKey inserts k unless its user has max keys already
	// (ErrTooMany); concurrent calls cannot pass max together.
	CreateAPIKey(ctx context.Context, k APIKey, max int) error
	// APIKeyByHash returns the key and its user.
	APIKeyByHash(ctx context.Context, keyHash string) (APIKey, User, error)
	// ListAPIKeys returns up to limit of the user's keys after the cursor,
	// newest first (see Cursor).
	ListAPIKeys(ctx context.Context, userID string, after Cursor, limit int) ([]APIKey, error)
	DeleteAPIKey(ctx context.Context, userID, id string) error // ErrNotFound unless the user owns it
	// TouchAPIKeys records last-use times in one write.
	TouchAPIKeys(ctx context.Context, used map[string]time.Time) error
}
