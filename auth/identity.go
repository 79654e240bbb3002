// Who a request's caller is (Identity), carried in its context, and the
// context flag that forbids a store lookup (WithoutLookup).

package auth

import (
	"context"
	"time"
)

// Method says how a caller authenticated.
type Method string

const (
	MethodSession Method = "session" // the session cookie
	MethodAPIKey  Method = "apikey"  // an API key
)

// An Identity is the resolved caller of one request.
type Identity struct {
	User   User
	Method Method
	// SessionHash is set for MethodSession, APIKeyID for MethodAPIKey.
	SessionHash string
	APIKeyID    string
	// ExpiresAt is when the session ends at the latest.
	ExpiresAt time.Time
}

type identityKey struct{}

type noLookupKey struct{}

// WithoutLookup returns ctx asking [Service.Authenticate] and
// [Service.AuthenticateKey] to look up only credentials this replica has
// seen valid (its caches keep them, stale, until they are revoked, the
// store says they are gone, or they are crowded out), returning
// ErrNotCached for any others instead of asking
// the store. A server uses it for a client address that is refused for
// sending bad credentials: a flood of made-up ones never reaches the
// database, while the callers it knows behind the same address go on.
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
