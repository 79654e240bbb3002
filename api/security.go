package api

import (
	"errors"
	"net/http"

	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
)

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
// requirement and its 401/403 responses follow from its Access.
// It must run before declareErrors, which documents op.Errors.
func declareSecurity(_ *huma.OpenAPI, op *huma.Operation) {
	switch accessOf(op) {
	case Probe, Public:
		op.Security = []map[string][]string{}
	case Session:
		op.Security = []map[string][]string{{schemeSession: {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	case Admin:
		op.Security = []map[string][]string{{schemeSession: {}}, {schemeBearer: {}}, {schemeAPIKey: {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	default:
		op.Security = []map[string][]string{{schemeSession: {}}, {schemeBearer: {}}, {schemeAPIKey: {}}}
		op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusServiceUnavailable)
		if op.Method != http.MethodGet && op.Method != http.MethodHead {
			op.Errors = append(op.Errors, http.StatusForbidden) // cross-site cookie requests
		}
	}
}

// requireCaller returns the huma middleware that resolves the caller of
// every operation that needs one and enforces what declareSecurity
// documents: 503 when the store cannot say who it is; 401 without a
// caller, charged to the ip plane (ps.failedAuth), which answers 429
// instead once the address has spent its budget; 403 for an API key on a
// session-only operation, charged to the key's budget (ps.refusedCaller), and
// for any user but admin on an Admin operation. The caller then goes in the context
// (auth.FromContext) for the planes and the handler. The cause of a 503
// goes to outages, once per cause.
//
// An address the ip plane refuses gets no store lookups until its budget
// would admit again: its credentials are checked against the caches only,
// so a flood of made-up keys or cookies never reaches the database.
func requireCaller(api huma.API, svc *auth.Service, ps *planes, outages *outageLog) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		access := accessOf(op)
		if access == Probe || access == Public {
			next(ctx)
			return
		}
		r, _ := humachi.Unwrap(ctx)
		ip := GetClientIP(r.Context())
		lookup := r.Context()
		if ps.refusing(ip) {
			lookup = auth.WithoutLookup(lookup)
		}
		id, err := resolveCaller(lookup, svc, r)
		charged := false
		if errors.Is(err, auth.ErrNotCached) {
			// Charge first; only if the address's budget admits again
			// are its credentials worth a lookup.
			if ps.failedAuth(ctx, ip) {
				return
			}
			charged = true
			id, err = resolveCaller(r.Context(), svc, r)
		}
		if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
			if clientGone(r.Context()) {
				// The client left during the lookup: not an outage. Only
				// the access log records it.
				_, w := humachi.Unwrap(ctx)
				w.WriteHeader(StatusClientClosedRequest)
				return
			}
			outages.log(r.Context(), err)
			writeHumaError(api, ctx, NewError(http.StatusServiceUnavailable, "brain cannot check credentials right now; retry shortly"))
			return
		}
		if id == nil {
			if charged || !ps.failedAuth(ctx, ip) {
				writeHumaError(api, ctx, NewError(http.StatusUnauthorized, "log in, or send an API key as Authorization: Bearer or X-API-Key"))
			}
			return
		}
		if access == Session && id.Method != auth.MethodSession {
			if !ps.refusedCaller(ctx, id) { // the key's own budget pays for its 403s
				writeHumaError(api, ctx, NewError(http.StatusForbidden, "this operation needs a logged-in session; an API key cannot call it"))
			}
			return
		}
		if access == Admin && id.User.Username != AdminUsername {
			if !ps.refusedCaller(ctx, id) { // the caller's budget pays for its 403s
				writeHumaError(api, ctx, NewError(http.StatusForbidden, "this operation is for the user "+AdminUsername+" only"))
			}
			return
		}
		noteUser(ctx.Context(), id.User.ID)
		next(huma.WithContext(ctx, auth.NewContext(ctx.Context(), id)))
	}
}

// writeHumaError writes e, with its headers, from inside a huma middleware.
func writeHumaError(api huma.API, ctx huma.Context, e *Error) {
	for k, vs := range e.header { // the error's own, in place of any set before
		for i, v := range vs {
			if i == 0 {
				ctx.SetHeader(k, v)
			} else {
				ctx.AppendHeader(k, v)
			}
		}
	}
	ctx.SetHeader("Content-Type", "application/json")
	ctx.SetStatus(e.status)
	_ = api.Marshal(ctx.BodyWriter(), "application/json", e)
}
