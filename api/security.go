package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
)

// The security schemes, as named in the spec.
const (
	schemeSession = "session"
	schemeBearer  = "bearer"
	schemeAPIKey  = "apiKey"
	// SessionCookie is the session cookie's name.
	SessionCookie = product.SessionCookie
)

var securitySchemes = map[string]*huma.SecurityScheme{
	schemeSession: {Type: "apiKey", In: "cookie", Name: SessionCookie, Description: "The session cookie POST /api/v1/auth/login sets."},
	schemeBearer:  {Type: "http", Scheme: "bearer", Description: "An API key (brk_...) as a bearer token."},
	schemeAPIKey:  {Type: "apiKey", In: "header", Name: "X-API-Key", Description: "An API key (brk_...)."},
}

// noStore is the Cache-Control of every answer to a known caller.
const noStore = "no-store"

const refNoStore = refHeader + "Cache-Control"

// declareSecurity gives op the security requirement, errors and
// Cache-Control: no-store that its access implies.
func declareSecurity(op *huma.Operation, access Access) {
	all := []map[string][]string{{schemeSession: {}}, {schemeBearer: {}}, {schemeAPIKey: {}}}
	switch access {
	case Probe, Public:
		op.Security = []map[string][]string{}
		return
	case Session:
		op.Security = all[:1]
	default:
		op.Security = all
	}
	op.Errors = append(op.Errors, http.StatusUnauthorized, http.StatusServiceUnavailable)
	if access != Caller || (op.Method != http.MethodGet && op.Method != http.MethodHead) {
		op.Errors = append(op.Errors, http.StatusForbidden) // a Caller's: cross-site cookie requests
	}
	for status, r := range op.Responses {
		if status[0] == '2' {
			if r.Headers == nil {
				r.Headers = map[string]*huma.Header{}
			}
			r.Headers["Cache-Control"] = &huma.Header{Ref: refNoStore}
		}
	}
}

// requireCaller returns the huma middleware that resolves the caller of
// every operation that needs one (auth.FromContext) and enforces what
// declareSecurity documents: a 401 is charged to the ip plane, a 403 to the
// caller's budget.
func requireCaller(api huma.API, svc *auth.Service, ps *planes, outages *outageLog) func(huma.Context, func(huma.Context)) {
	g := &callerGate{api: api, svc: svc, ps: ps, outages: outages}
	return func(ctx huma.Context, next func(huma.Context)) {
		access := declarationOf(ctx.Operation()).access()
		if access == Probe || access == Public {
			next(ctx)
			return
		}
		id, ok := g.caller(ctx)
		if !ok {
			return
		}
		_, w := humachi.Unwrap(ctx)
		w.Header().Set("Cache-Control", noStore)
		if g.forbidden(ctx, access, id) {
			return
		}
		middleware.NoteUser(ctx.Context(), id.User.ID)
		next(huma.WithContext(ctx, auth.NewContext(ctx.Context(), id)))
	}
}

type callerGate struct {
	api     huma.API
	svc     *auth.Service
	ps      *planes
	outages *outageLog
}

// caller resolves the caller of ctx's request, or answers it and returns
// false. An address the ip plane refuses is checked against the caches only,
// so a flood of made-up keys never reaches the database.
func (g *callerGate) caller(ctx huma.Context) (id *auth.Identity, ok bool) {
	r, _ := humachi.Unwrap(ctx)
	ip := middleware.ClientKey(r.Context())
	lookup := r.Context()
	if g.ps.refused.refusing(ip, g.ps.now()) {
		lookup = auth.WithoutLookup(lookup)
	}
	id, err := resolveCaller(lookup, g.svc, r)
	charged := false
	if errors.Is(err, auth.ErrNotCached) {
		// only if the address's budget admits again is a lookup worth it
		if g.ps.chargeRefused(ctx, g.ps.ip, ip) {
			return nil, false
		}
		charged = true
		id, err = resolveCaller(r.Context(), g.svc, r)
	}
	if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		g.unavailable(ctx, r, err)
		return nil, false
	}
	if id == nil {
		if charged || !g.ps.chargeRefused(ctx, g.ps.ip, ip) {
			writeHumaError(g.api, ctx, NewError(http.StatusUnauthorized, "log in, or send an API key as Authorization: Bearer or X-API-Key"))
		}
		return nil, false
	}
	return id, true
}

// unavailable answers a request whose caller the store could not resolve.
func (g *callerGate) unavailable(ctx huma.Context, r *http.Request, err error) {
	if clientGone(r.Context()) {
		_, w := humachi.Unwrap(ctx)
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	g.outages.log(r.Context(), err)
	writeHumaError(g.api, ctx, NewError(http.StatusServiceUnavailable, product.Name+" cannot check credentials right now; retry shortly"))
}

// forbidden answers 403 (or the caller's budget's 429) and returns true
// when access does not admit id.
func (g *callerGate) forbidden(ctx huma.Context, access Access, id *auth.Identity) bool {
	var msg string
	switch {
	case access == Session && id.Method != auth.MethodSession:
		msg = "this operation needs a logged-in session; an API key cannot call it"
	case access == Admin && !id.User.Admin:
		msg = "this operation is for admins only"
	default:
		return false
	}
	p, key := g.ps.session, id.SessionHash
	if id.Method == auth.MethodAPIKey {
		p, key = g.ps.apikey, id.APIKeyID
	}
	if !g.ps.chargeRefused(ctx, p, key) { // the caller's default budget pays for its 403s
		writeHumaError(g.api, ctx, NewError(http.StatusForbidden, msg))
	}
	return true
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

// resolveCaller returns the caller r authenticates as, by API key or else
// session cookie: auth.ErrUnauthenticated for unknown credentials, nil, nil
// for none; any other error means the store could not say.
func resolveCaller(ctx context.Context, svc *auth.Service, r *http.Request) (*auth.Identity, error) {
	if svc == nil {
		return nil, nil
	}
	if key := apiKeyFrom(r); key != "" {
		return svc.AuthenticateKey(ctx, key)
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return svc.Authenticate(ctx, c.Value)
	}
	return nil, nil
}

func apiKeyFrom(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, key, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
	}
	return r.Header.Get("X-Api-Key")
}
