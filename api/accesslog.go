package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

var (
	loggerKey = &contextKey{"logger"}
	noteKey   = &contextKey{"access-note"}
)

// accessNote is what the access log learns of a request as it is served:
// its client's address (noteClientIP) and its user (noteUser).
type accessNote struct {
	mu       sync.Mutex
	ip, user string
}

// noteClientIP is a middleware that tells the access log the request's
// client address. Mount it after [ClientIP].
func noteClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := r.Context().Value(noteKey).(*accessNote); ok {
			n.mu.Lock()
			n.ip = GetClientIP(r.Context())
			n.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// noteUser tells the access log the id of the request's user.
func noteUser(ctx context.Context, userID string) {
	if n, ok := ctx.Value(noteKey).(*accessNote); ok {
		n.mu.Lock()
		n.user = userID
		n.mu.Unlock()
	}
}

// logger returns the request-scoped logger stored by [AccessLog], or
// slog.Default outside a request.
func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// AccessLog is a middleware that writes one log line per request, after it
// is served: request id, method, route pattern (not the raw path, so ids in
// paths do not explode log cardinality), status, bytes and duration, and,
// once the server's middleware has found them, the client's address and
// the user's id ("" when there is none). It also
// stores a logger carrying the request id in the context, for handlers and
// error paths. Mount it after [RequestID].
func AccessLog(base *slog.Logger, now func() time.Time) func(http.Handler) http.Handler {
	return accessLog(base, now, nil)
}

// accessLog is AccessLog that also reports each response's route,
// status and duration to observe, when it is not nil.
func accessLog(base *slog.Logger, now func() time.Time, observe func(route string, status int, took time.Duration)) func(http.Handler) http.Handler {
	if base == nil {
		panic("api: AccessLog needs a logger")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := now()
			l := base.With(slog.String("request_id", GetRequestID(r.Context())))
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			note := &accessNote{}
			r = r.WithContext(context.WithValue(context.WithValue(r.Context(), loggerKey, l), noteKey, note))
			defer func() {
				route := "-"
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK // nothing written: net/http sends 200
				}
				took := now().Sub(start)
				if observe != nil {
					observe(route, status, took)
				}
				note.mu.Lock()
				ip, user := note.ip, note.user
				note.mu.Unlock()
				l.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("route", route),
					slog.Int("status", status),
					slog.Int("bytes", ww.BytesWritten()),
					slog.Duration("duration", took),
					slog.String("ip", ip),
					slog.String("user", user),
				)
			}()
			next.ServeHTTP(ww, r)
		})
	}
}
