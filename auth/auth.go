// Package auth resolves who is calling: users and their passwords, sessions,
// API keys, and the login throttle. Package store keeps the rows.
package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/page"
)

// Errors a [Store] returns; the [Service] marks any other [ErrUnavailable].
var (
	ErrNotFound = fault.ErrNotFound
	ErrConflict = fault.ErrConflict // a username or key hash taken
	ErrTooMany  = fault.ErrTooMany  // as many API keys as the cap allows
)

// A User is someone who can log in. Each user's data is private to them.
type User struct {
	ID           string
	Username     string
	PasswordHash string // argon2id, PHC string form
	CreatedAt    time.Time
	Admin        bool // may call api.Admin operations; the first user is one
}

// A Session is a logged-in browser. Only the SHA-256 of its token is kept.
type Session struct {
	TokenHash  string // hex
	UserID     string
	CreatedAt  time.Time
	ExpiresAt  time.Time // absolute end of life
	LastSeenAt time.Time // for the idle timeout
}

// An APIKey lets a program call the API as its user. Only its SHA-256 is kept.
type APIKey struct {
	ID         string
	UserID     string
	Name       string
	Prefix     string
	KeyHash    string // hex
	CreatedAt  time.Time
	LastUsedAt time.Time // zero until first use
}

// A Cursor is a place in a list ordered newest first: [page.Cursor].
type Cursor = page.Cursor

// Store keeps users, sessions and API keys; every call ends in bounded time.
type Store interface {
	CreateUser(ctx context.Context, u User) error // ErrConflict when the username is taken
	UserByID(ctx context.Context, id string) (User, error)
	UserByUsername(ctx context.Context, username string) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// SetPasswordAndEndSessions sets the hash and ends the user's other sessions.
	SetPasswordAndEndSessions(ctx context.Context, userID, hash, keepTokenHash string) error
	// CreateSession inserts s and ends the user's oldest beyond max.
	CreateSession(ctx context.Context, s Session, max int) (evicted []string, err error)
	SessionByTokenHash(ctx context.Context, tokenHash string) (Session, User, error)
	TouchSessions(ctx context.Context, seen map[string]time.Time) error
	DeleteSession(ctx context.Context, tokenHash string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error)

	CreateAPIKey(ctx context.Context, k APIKey, max int) error // ErrTooMany at max keys
	APIKeyByHash(ctx context.Context, keyHash string) (APIKey, User, error)
	ListAPIKeys(ctx context.Context, userID string, after Cursor, limit int) ([]APIKey, error)
	DeleteAPIKey(ctx context.Context, userID, id string) error // ErrNotFound unless the user owns it
	TouchAPIKeys(ctx context.Context, used map[string]time.Time) error
}

// Errors of the [Service].
var (
	ErrInvalidCredentials = errors.New("auth: invalid username or password")
	ErrUnauthenticated    = errors.New("auth: not authenticated") // unknown, revoked or expired
	ErrInvalidUsername    = errors.New("auth: a username is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	ErrWeakPassword       = fmt.Errorf("auth: a password is %d to %d characters", MinPasswordLen, MaxPasswordLen)
	ErrNotCached          = errors.New("auth: not cached, and no lookup allowed")
	ErrUnavailable        = fault.ErrUnavailable // worth retrying shortly
	ErrBusy               = fmt.Errorf("%w: every password-hashing slot is busy", ErrUnavailable)
)

func unavailable(err error) error { return fault.Outage(err) }

// Method says how a caller authenticated.
type Method string

const (
	MethodSession Method = "session" // the session cookie
	MethodAPIKey  Method = "apikey"  // an API key
)

// An Identity is the resolved caller of one request.
type Identity struct {
	User        User
	Method      Method
	SessionHash string    // for MethodSession
	APIKeyID    string    // for MethodAPIKey
	ExpiresAt   time.Time // when the session ends at the latest
}

type (
	identityKey struct{}
	noLookupKey struct{}
)

// WithoutLookup returns ctx in which authentication answers only from this
// replica's caches, else ErrNotCached.
func WithoutLookup(ctx context.Context) context.Context {
	return context.WithValue(ctx, noLookupKey{}, true)
}

func lookupAllowed(ctx context.Context) bool { return ctx.Value(noLookupKey{}) == nil }

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the caller stored by NewContext, or nil.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
