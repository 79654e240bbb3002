package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"sync"
)

var requestKey = &contextKey{"request"}

// request is what the middleware learn of a request, in one context value:
// each r.WithContext copies the whole request, so they share one.
type request struct {
	id      string
	base    *slog.Logger // AccessLog's, which [Logger] gives the request's id
	ip, key string       // ClientIP's, set before any handler runs

	mu   sync.Mutex
	user string // NoteUser's, which a handler may set from its own goroutine
}

// state returns ctx's request state; when there is none, a fresh one and r
// carrying it.
func state(r *http.Request) (*request, *http.Request) {
	if s, ok := r.Context().Value(requestKey).(*request); ok {
		return s, r
	}
	s := &request{}
	return s, r.WithContext(context.WithValue(r.Context(), requestKey, s))
}

// stateOf returns ctx's request state, or an empty one never written to.
func stateOf(ctx context.Context) *request {
	if s, ok := ctx.Value(requestKey).(*request); ok {
		return s
	}
	return &noRequest
}

var noRequest request

// RequestID is a middleware that gives every request an id (X-Request-Id,
// [GetRequestID]), keeping an incoming one of 1..64 of [A-Za-z0-9._-].
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, r := state(r)
		s.id = r.Header.Get("X-Request-Id")
		if !validRequestID(s.id) {
			s.id = fmt.Sprintf("%016x", rand.Uint64())
		}
		w.Header()["X-Request-Id"] = []string{s.id}
		next.ServeHTTP(w, r)
	})
}

// GetRequestID returns the request id stored by [RequestID], or "".
func GetRequestID(ctx context.Context) string { return stateOf(ctx).id }

func validRequestID(id string) bool {
	return len(id) > 0 && len(id) <= 64 && !strings.ContainsFunc(id, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	})
}

// GetClientIP returns the address [ClientIP] stored, or "".
func GetClientIP(ctx context.Context) string { return stateOf(ctx).ip }

// ClientKey is what the per-address limits count the client by: its
// address, or for IPv6 its /64.
func ClientKey(ctx context.Context) string { return stateOf(ctx).key }

func (s *request) setIP(a netip.Addr) {
	if !a.IsValid() {
		return
	}
	s.ip = a.String()
	s.key = s.ip
	if a.Is6() {
		s.key = netip.PrefixFrom(a.WithZone(""), 64).Masked().String()
	}
}
