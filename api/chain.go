// This file is the middleware every request passes before its route
// (package middleware), and the forwards by which this package reads what
// it stored.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/product"
)

// chain is the router's middleware: middleware.Stack, every request's
// id, nosniff, access log, panic answer, body-error mark, client address,
// CORS, HEAD and CSRF in one layer.
func chain(cfg Config, tr *traffic) []func(http.Handler) http.Handler {
	return middleware.Chain(middleware.Config{
		Logger:         cfg.Logger,
		Now:            cfg.Now,
		Observe:        tr.observe,
		Internal:       http.HandlerFunc(internalError),
		TrustedProxies: cfg.TrustedProxies,
		Origins:        cfg.CORSOrigins,
		CSRFExempt:     sendsAPIKey,
		CrossSite:      http.HandlerFunc(crossSite),
	})
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
