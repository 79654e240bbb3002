// This file writes one log line per request, and gives handlers the
// request's logger.
package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// Logger returns the request-scoped logger of [AccessLog], which carries
// the request id; outside a request, the logger of [WithLogger], else
// slog.Default. The request's is made the first time a request asks for
// it: most requests never log but their access line.
func Logger(ctx context.Context) *slog.Logger {
	if st := stateOf(ctx); st != nil && st.base != nil {
		return st.logger()
	}
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

type loggerKey struct{}

// WithLogger returns ctx carrying l, which [Logger] gives outside a
// request: for background work (a job queue's workers, a sweep) started
// with ctx, so that what it logs goes where the server's log goes.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// AccessLog returns a middleware that writes one log line per request,
// after it is served: request id, method, route pattern (not the raw
// path, so ids in paths do not explode log cardinality), status, bytes and
// duration, and, once the middleware and handlers inside have noted them
// ([NoteClientIP], [NoteUser]), the client's address and the user's id (""
// when there is none). It also stores a logger carrying the request id in
// the context ([Logger]), for handlers and error paths. observe, when not
// nil, is told each response's route, status and duration as it is
// logged. Mount it after [RequestID].
func AccessLog(base *slog.Logger, now func() time.Time, observe func(route string, status int, took time.Duration)) func(http.Handler) http.Handler {
	a := newAccessLog(base, now, observe)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r, st := withState(r)
			start := a.begin(st, w)
			defer a.done(r, st, start)
			next.ServeHTTP(&st.rec, r)
		})
	}
}

// accessLog is [AccessLog]'s work.
type accessLog struct {
	base    *slog.Logger
	now     func() time.Time
	observe func(route string, status int, took time.Duration)
}

func newAccessLog(base *slog.Logger, now func() time.Time, observe func(string, int, time.Duration)) *accessLog {
	if base == nil {
		panic("middleware: AccessLog needs a logger")
	}
	if now == nil {
		now = time.Now
	}
	return &accessLog{base, now, observe}
}

// begin starts a request's record in st, whose recorder the handlers
// inside are to write to instead of w, and returns the time it starts.
func (a *accessLog) begin(st *state, w http.ResponseWriter) time.Time {
	st.base = a.base
	st.rec.ResponseWriter = w
	return a.now()
}

// done tells observe of the request and writes its line.
func (a *accessLog) done(r *http.Request, st *state, start time.Time) {
	route := "-"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	status := st.rec.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	end := a.now()
	took := end.Sub(start)
	if a.observe != nil {
		a.observe(route, status, took)
	}
	ip, user := st.read()
	h := a.base.Handler()
	if !h.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	// A record of its own, with no caller's PC: the line names no source,
	// and Logger.LogAttrs would walk the stack for one.
	rec := slog.NewRecord(end, slog.LevelInfo, "request", 0)
	rec.AddAttrs(slog.String("request_id", st.id),
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Int("bytes", st.rec.bytes),
		slog.Duration("duration", took),
		slog.String("ip", ip),
		slog.String("user", user))
	_ = h.Handle(r.Context(), rec)
}
