package middleware

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// Config is what [Chain]'s middleware take.
type Config struct {
	Logger  *slog.Logger                                       // AccessLog's; required
	Now     func() time.Time                                   // AccessLog's; nil: time.Now
	Observe func(route string, status int, took time.Duration) // AccessLog's; may be nil

	Internal http.Handler // Recoverer's answer to a panic; nil: a bare 500

	TrustedProxies []netip.Prefix // ClientIP's
	Origins        []string       // CORS's allowed origins, and CSRF's trusted ones

	CSRFExempt func(*http.Request) bool // CSRF's exempt; may be nil
	CrossSite  http.Handler             // CSRF's deny; nil: a bare 403
}

// Chain returns this package's middleware in the order to mount them:
// the log outside [Recoverer], so it sees a panic's response, and [CORS]
// before routing, so preflights need no route.
func Chain(cfg Config) []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{
		RequestID, NoSniff, AccessLog(cfg.Logger, cfg.Now, cfg.Observe), Recoverer(cfg.Internal),
		MarkBodyErrors, ClientIP(cfg.TrustedProxies), NoteClientIP, CORS(cfg.Origins),
		chimw.GetHead, CSRF(cfg.Origins, cfg.CSRFExempt, cfg.CrossSite),
	}
}
