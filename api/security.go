package api

import (
	"net/http"

	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// public lists the operations anyone may call. This is the one allowlist:
// every other operation needs a caller, and the spec says so. (The spec,
// /docs and static files are not huma operations and are public too.)
var public = map[string]bool{
	"get-health": true,
	"get-ready":  true,
	"login":      true,
}

// sessionOnly lists operations an API key may not call: a key cannot
// manage keys or passwords.
var sessionOnly = map[string]bool{
	"logout":          true,
	"change-password": true,
	"create-api-key":  true,
	"list-api-keys":   true,
	"delete-api-key":  true,
}

// The security schemes, as named in the spec.
const (
	schemeSession = "session"
	schemeBearer  = "bearer"
	schemeAPIKey  = "apiKey"
	// SessionCookie is the session cookie's name.
	SessionCookie = "brain_session"
)

var securitySchemes = map[string]*huma.SecurityScheme{
	schemeSession: {Type: "apiKey", In: "cookie", Name: SessionCookie, Description: "The session cookie POST /api/v1/auth/login sets."},
	schemeBearer:  {Type: "http", Scheme: "bearer", Description: "An API key (brk_...) as a bearer token."},
	schemeAPIKey:  {Type: "apiKey", In: "header", Name: "X-API-Key", Description: "An API key (brk_...)."},
}

// declareSecurity is an OnAddOperation hook: each operation's security
// requirement and its 401/403 responses follow from the two lists above.
// It must run before declareErrors, which documents op.Errors.
func declareSecurity(_ *huma.OpenAPI, op *huma.Operation) {
	switch {
	case public[op.OperationID]:
		op.Security = []map[string][]string{}
	case sessionOnly[op.OperationID]:
		op.Security = []map[string][]string{{schemeSession: {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	default:
		op.Security = []map[string][]string{{schemeSession: {}}, {schemeBearer: {}}, {schemeAPIKey: {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusServiceUnavailable)
		if op.Method != http.MethodGet && op.Method != http.MethodHead {
			op.Errors = append(op.Errors, http.StatusForbidden) // cross-site cookie requests
		}
	}
}

// requireCaller is the huma middleware that enforces what declareSecurity
// documents: 401 without a caller, 403 for an API key on a session-only
// operation, and 503 when the credentials could not be checked (the
// cause goes to outages).
func requireCaller(api huma.API, outages *outageLog) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		if public[op.OperationID] {
			next(ctx)
			return
		}
		id := auth.FromContext(ctx.Context())
		if err := authUnavailable(ctx.Context()); id == nil && err != nil {
			outages.log(ctx.Context(), err)
			writeHumaError(api, ctx, NewError(http.StatusServiceUnavailable, "brain cannot check credentials right now; retry shortly"))
			return
		}
		if id == nil {
			writeHumaError(api, ctx, NewError(http.StatusUnauthorized, "log in, or send an API key as Authorization: Bearer or X-API-Key"))
			return
		}
		if sessionOnly[op.OperationID] && id.Method != auth.MethodSession {
			writeHumaError(api, ctx, NewError(http.StatusForbidden, "this operation needs a logged-in session; an API key cannot call it"))
			return
		}
		next(ctx)
	}
}

// writeHumaError writes e, with its headers, from inside a huma middleware.
func writeHumaError(api huma.API, ctx huma.Context, e *Error) {
	for k, vs := range e.header {
		for _, v := range vs {
			ctx.AppendHeader(k, v)
		}
	}
	ctx.SetHeader("Content-Type", "application/json")
	ctx.SetStatus(e.status)
	_ = api.Marshal(ctx.BodyWriter(), "application/json", e)
}
