package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

var loggerKey = &contextKey{"logger"}

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
// paths do not explode log cardinality), status, bytes and duration. It also
// stores a logger carrying the request id in the context, for handlers and
// error paths. Mount it after [RequestID].
func AccessLog(base *slog.Logger, now func() time.Time) func(http.Handler) http.Handler {
	return accessLog(base, now, nil)
}

// accessLog is AccessLog that also reports each response's status to
// observe, when it is not nil.
func accessLog(base *slog.Logger, now func() time.Time, observe func(status int)) func(http.Handler) http.Handler {
	if base == nil {
		panic("api: AccessLog needs a logger")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := now()
			l := base.With(slog.String("request_id", GetRequestID(r.Context())))
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			r = r.WithContext(context.WithValue(r.Context(), loggerKey, l))
			defer func() {
				route := "-"
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK // nothing written: net/http sends 200
				}
				if observe != nil {
					observe(status)
				}
				l.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("route", route),
					slog.Int("status", status),
					slog.Int("bytes", ww.BytesWritten()),
					slog.Duration("duration", now().Sub(start)),
				)
			}()
			next.ServeHTTP(ww, r)
		})
	}
}
