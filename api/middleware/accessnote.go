// This file tells the access log what is learned of a request as it is
// served: its client's address and its user.
package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
)

var noteKey = &contextKey{"access-note"}

// accessNote is what the access log learns of a request as it is served,
// and the request's logger. The middleware and handlers that learn it run
// inside the access log, so they cannot hand it back in a context: they
// write it here.
type accessNote struct {
	base *slog.Logger
	id   string // the request id

	mu       sync.Mutex
	ip, user string
	l        *slog.Logger // base with the request id, once asked for
}

// logger is the request's logger: base with its request id.
func (n *accessNote) logger() *slog.Logger {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.l == nil {
		n.l = n.base.With(slog.String("request_id", n.id))
	}
	return n.l
}

func (n *accessNote) read() (ip, user string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ip, n.user
}

// NoteClientIP is a middleware that tells the access log the request's
// client address ([GetClientIP]). Mount it after [ClientIP].
func NoteClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := r.Context().Value(noteKey).(*accessNote); ok {
			n.mu.Lock()
			n.ip = GetClientIP(r.Context())
			n.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// NoteUser tells the access log the id of the request's user, once it
// is known. Outside [AccessLog] it does nothing.
func NoteUser(ctx context.Context, userID string) {
	if n, ok := ctx.Value(noteKey).(*accessNote); ok {
		n.mu.Lock()
		n.user = userID
		n.mu.Unlock()
	}
}
