package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/product"
)

// chain is the router's middleware, with this package's answers.
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

func internalError(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, NewError(http.StatusInternalServerError, ""))
}

// sendsAPIKey reports whether r sends an API key, which CSRF lets through.
func sendsAPIKey(r *http.Request) bool { return apiKeyFrom(r) != "" }

func crossSite(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, NewError(http.StatusForbidden, "cross-site request refused: a cookie-authenticated change must come from "+product.Name+"'s own pages or a trusted origin"))
}

func logger(ctx context.Context) *slog.Logger { return middleware.Logger(ctx) }
