package middleware

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

var requestIDKey = &contextKey{"request-id"}

// RequestID is a middleware that gives every request an id (X-Request-Id,
// [GetRequestID]), keeping an incoming one of 1..64 of [A-Za-z0-9._-].
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = fmt.Sprintf("%016x", rand.Uint64())
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// GetRequestID returns the request id stored by [RequestID], or "".
func GetRequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func validRequestID(id string) bool {
	return len(id) > 0 && len(id) <= 64 && !strings.ContainsFunc(id, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	})
}
