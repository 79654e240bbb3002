// Package auth resolves who is calling: users and their passwords, sessions,
// API keys, and the login throttle. It holds the rules; package store keeps
// the rows and package api speaks HTTP.
package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/page"
)

// Errors a [Store] returns, package fault's kinds. Any other store error
// means it failed; the [Service] passes it on marked [ErrUnavailable].
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

// A Cursor is a place in a list ordered newest first: [page.Cursor].
type Cursor = page.Cursor

// Store keeps users, sessions and API keys (package store). Every call
// must end in bounded time even when ctx has no deadline.
type Store interface {
	CreateUser(ctx context.Context, u User) error // ErrConflict when the username is taken
	UserByID(ctx context.Context, id string) (User, error)
	UserByUsername(ctx context.Context, username string) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// SetPasswordAndEndSessions sets the user's password hash and deletes
	// every session of theirs but keepTokenHash's, in one transaction.
	SetPasswordAndEndSessions(ctx context.Context, userID, hash, keepTokenHash string) error

	// CreateSession inserts s and, in the same transaction, deletes the
	// user's oldest sessions so at most max remain; it returns their hashes.
	CreateSession(ctx context.Context, s Session, max int) (evicted []string, err error)
	// SessionByTokenHash returns the session and its user.
	SessionByTokenHash(ctx context.Context, tokenHash string) (Session, User, error)
	TouchSessions(ctx context.Context, seen map[string]time.Time) error
	DeleteSession(ctx context.Context, tokenHash string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time, idle time.Duration) (int, error)

	// CreateAPIKey inserts k unless its user has max keys already
	// (ErrTooMany); concurrent calls cannot pass max together.
	CreateAPIKey(ctx context.Context, k APIKey, max int) error
	// APIKeyByHash returns the key and its user.
	APIKeyByHash(ctx context.Context, keyHash string) (APIKey, User, error)
	// ListAPIKeys returns up to limit of the user's keys after the cursor.
	ListAPIKeys(ctx context.Context, userID string, after Cursor, limit int) ([]APIKey, error)
	DeleteAPIKey(ctx context.Context, userID, id string) error // ErrNotFound unless the user owns it
	TouchAPIKeys(ctx context.Context, used map[string]time.Time) error
}

// Errors of the [Service].
var (
	// ErrInvalidCredentials: unknown user or wrong password, deliberately one.
	ErrInvalidCredentials = errors.New("auth: invalid username or password")
	// ErrUnauthenticated: the token or key is unknown, revoked or expired.
	ErrUnauthenticated = errors.New("auth: not authenticated")
	ErrInvalidUsername = errors.New("auth: a username is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	ErrWeakPassword    = fmt.Errorf("auth: a password is %d to %d characters", MinPasswordLen, MaxPasswordLen)
	// ErrNotCached: not in this replica's caches, and no lookup allowed.
	ErrNotCached = errors.New("auth: not cached, and no lookup allowed")
	// ErrUnavailable: not the caller's fault, worth retrying shortly; it
	// marks every store failure, and ErrBusy.
	ErrUnavailable = fault.ErrUnavailable
	// ErrBusy: every password-hashing slot stayed taken for HashWait.
	ErrBusy = fmt.Errorf("%w: every password-hashing slot is busy", ErrUnavailable)
)

// unavailable marks err with ErrUnavailable unless it is a store's answer
// or the caller's leaving: [fault.Outage].
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

type identityKey struct{}

type noLookupKey struct{}

// WithoutLookup returns ctx asking [Service.Authenticate] and
// [Service.AuthenticateKey] to look up only credentials this replica has
// seen valid, and return ErrNotCached for others: for an address refused
// for bad credentials, so a flood of made-up ones never reaches the store.
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
