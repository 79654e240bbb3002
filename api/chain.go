package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/product"
)

// chain is the router's middleware (middleware.Chain), in order, with this
// package's answers.
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

// internalError is the answer to a panic: the 500 envelope.
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

// logger is the logger of ctx (middleware.Logger).
func logger(ctx context.Context) *slog.Logger { return middleware.Logger(ctx) }
