// Package middleware holds the chi-style net/http middleware every request
// passes before its route: request id, nosniff, access log, panic recovery,
// body-error marking, client address, CORS and CSRF. [Chain] lists them in
// order; what one needs of package api it takes as a parameter.
package middleware

import (
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// Config is what [Chain]'s middleware take.
type Config struct {
	Logger  *slog.Logger                                       // AccessLog's; required
	Now     func() time.Time                                   // AccessLog's; nil: time.Now
	Observe func(route string, status int, took time.Duration) // AccessLog's; may be nil

	Internal http.Handler // Recoverer's answer to a panic; nil: a bare 500

	TrustedProxies []netip.Prefix       // ClientIP's, and Trace's trusted callers
	Tracer         trace.TracerProvider // Trace's; nil: no spans
	Origins        []string             // CORS's allowed origins, and CSRF's trusted ones

	CSRFExempt func(*http.Request) bool // CSRF's exempt; may be nil
	CrossSite  http.Handler             // CSRF's deny; nil: a bare 403
}

// Chain returns this package's middleware in the order to mount them:
// [Trace], when on, outside the log, so the access line is in the span; the
// log outside [Recoverer], so it sees a panic's response; and [CORS] before
// routing, so preflights need no route.
func Chain(cfg Config) []func(http.Handler) http.Handler {
	mw := []func(http.Handler) http.Handler{
		RequestID, NoSniff, AccessLog(cfg.Logger, cfg.Now, cfg.Observe), Recoverer(cfg.Internal),
		MarkBodyErrors, ClientIP(cfg.TrustedProxies), CORS(cfg.Origins),
		chimw.GetHead, CSRF(cfg.Origins, cfg.CSRFExempt, cfg.CrossSite),
	}
	if cfg.Tracer != nil {
		mw = slices.Insert(mw, 1, Trace(cfg.Tracer, cfg.TrustedProxies))
	}
	return mw
}

type contextKey struct{ name string }

func (k *contextKey) String() string { return "middleware context value " + k.name }

// NoSniff sets X-Content-Type-Options: nosniff on every response.
var NoSniff = chimw.SetHeader("X-Content-Type-Options", "nosniff")
