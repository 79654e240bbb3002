// This file is what a package that extends the server with a door of its
// own uses: a raw handler that admits its requests itself, as package
// streams' stream endpoints do (they outlive anything a huma handler may
// return). It keeps its state on the server, resolves the caller as
// every operation does, draws from a plane's budget, and answers as the
// API answers; everything generic to any operation stays here.
package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
)

// An Extension is the state a package that extends the server keeps on
// it, made once per server by [Server.Extension]. Err reports the
// mistakes it found while the features registered (a stream added to a
// server no stream plane serves, say); [Server.Err] reports them with
// the server's own, so that a server with any does not serve.
type Extension interface {
	Err() error
}

// extension is one Extension of a server, under its key.
type extension struct {
	key   any
	value Extension
}

// Extension returns the extension of s under key, made by make on the
// first call for key. A package that extends the server finds its state
// again from the *Server a [Feature] is given. Use a key of a type of
// your own, unexported, as for a context's values. Call it while the
// server is built (from a Feature), not while it serves.
func (s *Server) Extension(key any, make func() Extension) Extension {
	for _, x := range s.extensions {
		if x.key == key {
			return x.value
		}
	}
	v := make()
	s.extensions = append(s.extensions, extension{key, v})
	return v
}

// RequireCaller resolves the caller of ctx's request as the middleware
// of every operation does, for a raw handler that admits its requests
// itself (its operation, ctx.Operation(), declares its access). When
// there is none, or its access refuses it, it answers the request — 401
// (charged to the ip plane, which may answer 429 instead), 403 (charged
// to the caller's budget), 503, or 499 when the client left — and
// returns nil. It returns nil too, having answered nothing, on an
// operation of Public or Probe access, which needs no caller.
func (s *Server) RequireCaller(ctx huma.Context) *auth.Identity {
	var id *auth.Identity
	s.requireCaller(ctx, func(ctx huma.Context) { id = auth.FromContext(ctx.Context()) })
	return id
}

// Authenticate returns the caller r's credentials name now, through the
// auth service's caches as for any request, answering nothing: for a
// request that lives long (a stream) and checks now and then that its
// credentials still hold. nil and auth.ErrUnauthenticated for credentials
// no longer known, nil and nil for none (or a server without an auth
// service); any other error means the store could not say.
func (s *Server) Authenticate(ctx context.Context, r *http.Request) (*auth.Identity, error) {
	return resolveCaller(ctx, s.auth, r)
}

// A PlaneBudget is a budget of a plane that an operation's handler draws
// each request from itself (Declaration.Draws): the stream plane's open
// budget. Its limits, its store, its metrics and its 429 are those of
// every plane.
type PlaneBudget struct {
	p *plane
}

// PlaneBudget returns the plane budget named name (StreamOpensBudget,
// StreamUserOpensBudget), or nil when there is none of that name or the
// limits are disabled.
func (s *Server) PlaneBudget(name string) *PlaneBudget {
	p := s.planes.planeBudget(name)
	if p == nil || s.planes.limits.Disabled {
		return nil
	}
	return &PlaneBudget{p}
}

// Budget is the budget's name and limits, as the headers describe it.
func (b *PlaneBudget) Budget() ratelimit.Budget { return b.p.limiter.Budget() }

// Draw asks the budget to admit one request for key, and counts its
// decision. It returns the decision, whose headers are the caller's to
// write (with its caps'), and, when the request is not admitted, its
// answer: the 429 of the budget's tightest limit, with the true wait; 503
// when the budget's store fails, its cause kept for [Server.Refuse] to
// log; 499 when the client left meanwhile.
func (b *PlaneBudget) Draw(ctx context.Context, key string) (ratelimit.Decision, *Error) {
	d, err := b.p.limiter.Allow(ctx, key)
	switch {
	case err != nil && clientGone(ctx): // not the store's failure: nobody is left to answer
		return d, NewError(StatusClientClosedRequest, "")
	case err != nil:
		b.p.count.Failed()
		return d, unavailable(product.Name+" cannot check its rate limits right now; retry shortly", err)
	case !d.Allowed:
		b.p.count.Limited()
		return d, refusal(b.p, &d)
	}
	b.p.count.Allowed()
	return d, nil
}

// Refund gives back the request d, an admitted decision of Draw for key,
// took, and makes d say so: for a request that a later check refused,
// so that a refusal costs no budget, even when its client has left. A
// store that fails is logged.
func (b *PlaneBudget) Refund(ctx context.Context, key string, d *ratelimit.Decision) {
	if err := b.p.limiter.Refund(context.WithoutCancel(ctx), key, d); err != nil {
		logger(ctx).Warn("a refused request's token was not given back", "budget", b.p.limiter.Budget().Name, "error", err)
	}
}

// Refuse answers r with e from a raw handler, as an operation's error is
// answered: a 429 is counted and logged with the API's other refusals (by
// its caller, auth.FromContext of r's context, if any); the cause of a
// 503 goes to the outage log, once a minute per cause, and any other
// cause to the log as an error; a 499 (the client left) writes its status
// only, for the access log. The headers already set on w are kept.
func (s *Server) Refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	s.planes.refusals.observe(r.Context(), e, nil)
	if e.status == StatusClientClosedRequest {
		w.WriteHeader(StatusClientClosedRequest) // nobody is left to answer
		return
	}
	logCause(r.Context(), s.outages, e)
	WriteError(w, e)
}

// LogOutage logs that cause, a store's failure, failed the request of ctx
// (or a stream, or a count the server reads now and then): at WARN, once
// a minute per cause, as the cause of every 503 is.
func (s *Server) LogOutage(ctx context.Context, cause error) { s.outages.log(ctx, cause) }

// Now is the server's clock (Config.Now).
func (s *Server) Now() time.Time { return s.now() }

// Traffic is what the server has answered since it started: every
// response, and of those the 429s.
func (s *Server) Traffic() (requests, limited uint64) {
	return s.traffic.requests.Load(), s.traffic.limited.Load()
}
