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
			r.Headers["Cache-Control"] = &huma.Header{Ref: refHeader + "Cache-Control"}
		}
	}
}

// requireCaller is the huma middleware that resolves the caller of every
// operation that needs one (auth.FromContext) and enforces what
// declareSecurity documents: a 401 is charged to the ip plane, a 403 to the
// caller's budget.
func (s *Server) requireCaller(ctx huma.Context, next func(huma.Context)) {
	access := declarationOf(ctx.Operation()).access()
	if access == Probe || access == Public {
		next(ctx)
		return
	}
	id, ok := s.caller(ctx)
	if !ok {
		return
	}
	_, w := humachi.Unwrap(ctx)
	w.Header().Set("Cache-Control", noStore)
	if s.forbidden(ctx, access, id) {
		return
	}
	middleware.NoteUser(ctx.Context(), id.User.ID)
	next(huma.WithContext(ctx, auth.NewContext(ctx.Context(), id)))
}

// caller resolves the caller of ctx's request, or answers it and returns
// false. An address the ip plane refuses is checked against the caches only,
// so a flood of made-up keys never reaches the database.
func (s *Server) caller(ctx huma.Context) (id *auth.Identity, ok bool) {
	r, _ := humachi.Unwrap(ctx)
	ip := middleware.ClientKey(r.Context())
	lookup := r.Context()
	if s.planes.refused.refusing(ip, s.planes.now()) {
		lookup = auth.WithoutLookup(lookup)
	}
	id, err := resolveCaller(lookup, s.auth, r)
	charged := false
	if errors.Is(err, auth.ErrNotCached) {
		// only if the address's budget admits again is a lookup worth it
		if s.planes.chargeRefused(ctx, s.planes.ip, ip) {
			return nil, false
		}
		charged = true
		id, err = resolveCaller(r.Context(), s.auth, r)
	}
	if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
		s.credentialsUnavailable(ctx, r, err)
		return nil, false
	}
	if id == nil {
		if charged || !s.planes.chargeRefused(ctx, s.planes.ip, ip) {
			writeHumaError(s.API, ctx, NewError(http.StatusUnauthorized, "log in, or send an API key as Authorization: Bearer or X-API-Key"))
		}
		return nil, false
	}
	return id, true
}

// credentialsUnavailable answers a request whose caller the store could not resolve.
func (s *Server) credentialsUnavailable(ctx huma.Context, r *http.Request, err error) {
	if clientGone(r.Context()) {
		_, w := humachi.Unwrap(ctx)
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	s.outages.log(r.Context(), err)
	writeHumaError(s.API, ctx, NewError(http.StatusServiceUnavailable, product.Name+" cannot check credentials right now; retry shortly"))
}

// forbidden answers 403 (or the caller's budget's 429) and returns true
// when access does not admit id.
func (s *Server) forbidden(ctx huma.Context, access Access, id *auth.Identity) bool {
	var msg string
	switch {
	case access == Session && id.Method != auth.MethodSession:
		msg = "this operation needs a logged-in session; an API key cannot call it"
	case access == Admin && !id.User.Admin:
		msg = "this operation is for admins only"
	default:
		return false
	}
	p, key := s.planes.session, id.SessionHash
	if id.Method == auth.MethodAPIKey {
		p, key = s.planes.apikey, id.APIKeyID
	}
	if !s.planes.chargeRefused(ctx, p, key) { // the caller's default budget pays for its 403s
		writeHumaError(s.API, ctx, NewError(http.StatusForbidden, msg))
	}
	return true
}

// writeHumaError writes e, with its headers, from inside a huma middleware.
func writeHumaError(api huma.API, ctx huma.Context, e *Error) {
	for k, vs := range e.header { // the error's own, in place of any set before
		ctx.SetHeader(k, vs[0])
		for _, v := range vs[1:] {
			ctx.AppendHeader(k, v)
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
