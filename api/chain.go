// This file is the middleware chain every request passes before its route
// (package middleware), and
// the forwards by which this package reads what that chain stored.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/product"
	chimw "github.com/go-chi/chi/v5/middleware"
)

// chain is the router's middleware, outermost first: the request id, then
// nosniff and the access log (so both see every response, a panic's
// included), the panic's 500 inside the log, the body-error mark, the
// client's address (and the access log told of it), CORS (whose
// preflights need no route), HEAD wherever GET is, as HTTP asks, and
// CSRF.
func chain(cfg Config, tr *traffic) []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{
		middleware.RequestID,
		middleware.NoSniff,
		middleware.AccessLog(cfg.Logger, cfg.Now, tr.observe),
		middleware.Recoverer(http.HandlerFunc(internalError)),
		middleware.MarkBodyErrors,
		middleware.ClientIP(cfg.TrustedProxies),
		middleware.NoteClientIP,
		middleware.CORS(cfg.CORSOrigins),
		chimw.GetHead,
		middleware.CSRF(cfg.CORSOrigins, sendsAPIKey, http.HandlerFunc(crossSite)),
	}
}

// internalError is the answer to a panic: the 500 envelope, nothing of
// the panic in it.
func internalError(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, NewError(http.StatusInternalServerError, ""))
}

// sendsAPIKey reports whether r sends an API key, which a browser never
// attaches on its own: CSRF lets it through.
func sendsAPIKey(r *http.Request) bool { return apiKeyFrom(r) != "" }

// crossSite is the answer to a request CSRF refuses.
func crossSite(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, NewError(http.StatusForbidden, "cross-site request refused: a cookie-authenticated change must come from "+product.Name+"'s own pages or a trusted origin"))
}

// logger is the logger of ctx (middleware.Logger): a request's, with its
// id, else slog.Default.
func logger(ctx context.Context) *slog.Logger { return middleware.Logger(ctx) }
