package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/otel/trace"
)

var loggerKey = &contextKey{"logger"}

// Logger returns the request's logger, with its id and, in a span, its
// trace_id; else [WithLogger]'s, else slog.Default.
func Logger(ctx context.Context) *slog.Logger {
	if s := stateOf(ctx); s.base != nil { // made when asked: most requests never log
		l := s.base.With(slog.String("request_id", s.id))
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			l = l.With(slog.String("trace_id", sc.TraceID().String()))
		}
		return l
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
			s, r := state(r)
			s.base = base
			ww := chimw.NewWrapResponseWriter(w, r.ProtoMajor)
			start := now()
			defer func() {
				route := "-"
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK // nothing written: net/http sends 200
				}
				end := now()
				if observe != nil {
					observe(route, status, end.Sub(start))
				}
				if !base.Enabled(r.Context(), slog.LevelInfo) {
					return
				}
				s.mu.Lock()
				user := s.user
				s.mu.Unlock()
				// A record made here, without the caller's pc that Logger.LogAttrs
				// looks up on every line (runtime.Callers: 5 % of a request in process).
				line := slog.NewRecord(end, slog.LevelInfo, "request", 0)
				line.AddAttrs(slog.String("request_id", s.id), slog.String("method", r.Method),
					slog.String("route", route), slog.Int("status", status),
					slog.Int("bytes", ww.BytesWritten()), slog.Duration("duration", end.Sub(start)),
					slog.String("ip", s.ip), slog.String("user", user))
				_ = base.Handler().Handle(r.Context(), line) // a log line has no one to report a failure to
			}()
			next.ServeHTTP(ww, r)
		})
	}
}

// NoteUser tells the access log the id of the request's user.
func NoteUser(ctx context.Context, userID string) {
	if s, ok := ctx.Value(requestKey).(*request); ok {
		s.mu.Lock()
		s.user = userID
		s.mu.Unlock()
	}
}
