// This file is every middleware of this package in one layer.
package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	chimw "github.com/go-chi/chi/v5/middleware"
)

// Config is what [Stack] needs: what each of its middleware takes.
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

// Stack returns a middleware that does the work of all of this package's,
// in this order: [RequestID], [NoSniff] and [AccessLog] (so both see every
// response, a panic's included), [Recoverer] inside the log,
// [MarkBodyErrors], [ClientIP] and [NoteClientIP], [CORS] (whose
// preflights need no route), HEAD wherever GET is (chi's GetHead, as HTTP
// asks), and [CSRF].
//
// It is one layer, not a chain of ten: a request is copied once (for its
// one context value), its response writer is wrapped once, and the stack a
// handler runs on is ten frames shorter. Only what is configured to do
// something costs a layer of its own: ClientIP behind trusted proxies
// (chi's ClientIPFromXFF) and CORS with allowed origins (go-chi/cors).
func Stack(cfg Config) func(http.Handler) http.Handler {
	log := newAccessLog(cfg.Logger, cfg.Now, cfg.Observe)
	internal := orStatus(cfg.Internal, http.StatusInternalServerError)
	csrf := newCSRF(cfg.Origins, cfg.CSRFExempt, cfg.CrossSite)
	behindProxies := len(cfg.TrustedProxies) > 0
	return func(next http.Handler) http.Handler {
		getHead := chimw.GetHead(next)
		var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case csrf.refused(w, r):
			case r.Method == http.MethodHead:
				getHead.ServeHTTP(w, r)
			default:
				next.ServeHTTP(w, r)
			}
		})
		inner = CORS(cfg.Origins)(inner)
		if behindProxies {
			inner = ClientIP(cfg.TrustedProxies)(NoteClientIP(inner))
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := &state{}
			h := w.Header()
			st.identify(h, r)
			noSniff(h)
			r = r.WithContext(context.WithValue(r.Context(), stateKey, st))
			start := log.begin(st, w)
			defer log.done(r, st, start)
			defer func() {
				if v := recover(); v != nil {
					recovered(v, &st.rec, r, internal)
				}
			}()
			markBody(r)
			if !behindProxies {
				st.ip = peerIP(r) // no other goroutine has st yet: no lock
			}
			inner.ServeHTTP(&st.rec, r)
		})
	}
}
