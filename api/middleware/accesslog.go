package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"
)

var loggerKey, notesKey = &contextKey{"logger"}, &contextKey{"access-notes"}

// Logger returns the request's logger, with its id; else [WithLogger]'s,
// else slog.Default.
func Logger(ctx context.Context) *slog.Logger {
	if n, ok := ctx.Value(notesKey).(*notes); ok { // made when asked: most requests never log
		return n.base.With(slog.String("request_id", GetRequestID(ctx)))
	}
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// WithLogger returns ctx carrying l, which [Logger] gives outside a request.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

// notes is what the handlers inside [AccessLog] learn for its line.
type notes struct {
	base     *slog.Logger // AccessLog's, which [Logger] gives the request's id
	mu       sync.Mutex
	ip, user string
}

// AccessLog returns a middleware that logs one line per request, with its
// route pattern (never the raw path), and gives the request a logger with
// its id. observe, when not nil, is told each response. Mount it after
// [RequestID].
func AccessLog(base *slog.Logger, now func() time.Time, observe func(route string, status int, took time.Duration)) func(http.Handler) http.Handler {
	if base == nil {
		panic("middleware: AccessLog needs a logger")
	}
	if now == nil {
		now = time.Now
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := &notes{base: base}
			ctx := context.WithValue(r.Context(), notesKey, n)
			r = r.WithContext(ctx)
			ww := chimw.NewWrapResponseWriter(w, r.ProtoMajor)
			start := now()
			defer func() {
				route := "-"
				if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
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
				n.mu.Lock()
				ip, user := n.ip, n.user
				n.mu.Unlock()
				base.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("request_id", GetRequestID(ctx)),
					slog.String("method", r.Method), slog.String("route", route), slog.Int("status", status),
					slog.Int("bytes", ww.BytesWritten()), slog.Duration("duration", took),
					slog.String("ip", ip), slog.String("user", user))
			}()
			next.ServeHTTP(ww, r)
		})
	}
}

// NoteClientIP tells the access log the client's address. Mount it after [ClientIP].
func NoteClientIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note(r.Context(), func(n *notes) { n.ip = GetClientIP(r.Context()) })
		next.ServeHTTP(w, r)
	})
}

// NoteUser tells the access log the id of the request's user.
func NoteUser(ctx context.Context, userID string) {
	note(ctx, func(n *notes) { n.user = userID })
}

func note(ctx context.Context, set func(*notes)) {
	if n, ok := ctx.Value(notesKey).(*notes); ok {
		n.mu.Lock()
		set(n)
		n.mu.Unlock()
	}
}
