// This file serves a package that extends the server with a door of its
// own, a raw handler that admits its requests itself (package streams).
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
// it ([Server.Extension]). [Server.Err] reports its Err with its own.
type Extension interface {
	Err() error
}

// extension is one Extension of a server, under its key.
type extension struct {
	key   any
	value Extension
}

// Extension returns the extension of s under key (of an unexported type of
// your own), made by make on the first call. Call it from a Feature.
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

// RequireCaller resolves the caller of ctx's request as every operation
// does, for a raw handler. When there is none, or its access refuses it,
// it answers (401, 403, 429, 503 or 499) and returns nil; on a Public or
// Probe operation it returns nil and answers nothing.
func (s *Server) RequireCaller(ctx huma.Context) *auth.Identity {
	var id *auth.Identity
	s.requireCaller(ctx, func(ctx huma.Context) { id = auth.FromContext(ctx.Context()) })
	return id
}

// Authenticate returns the caller r's credentials name now, answering
// nothing: for a long request (a stream) that checks its credentials
// still hold. auth.ErrUnauthenticated: no longer known; nil, nil: none.
func (s *Server) Authenticate(ctx context.Context, r *http.Request) (*auth.Identity, error) {
	return resolveCaller(ctx, s.auth, r)
}

// A PlaneBudget is a plane's budget that a handler draws each request from
// itself (Declaration.Draws), with the limits, store, metrics and 429 of
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
// decision. It returns the decision, whose headers the caller writes, and
// the refusal: 429, 503 (its cause for [Server.Refuse] to log) or 499.
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

// Refund gives back what d, an admitted Draw for key, took, for a request
// a later check refused, so a refusal costs no budget.
func (b *PlaneBudget) Refund(ctx context.Context, key string, d *ratelimit.Decision) {
	if err := b.p.limiter.Refund(context.WithoutCancel(ctx), key, d); err != nil {
		logger(ctx).Warn("a refused request's token was not given back", "budget", b.p.limiter.Budget().Name, "error", err)
	}
}

// Refuse answers r with e from a raw handler as an operation's error is
// answered: a 429 counted and logged, a cause logged, a 499 its status
// only. The headers already set on w are kept.
func (s *Server) Refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	s.planes.refusals.observe(r.Context(), e, nil)
	if e.status == StatusClientClosedRequest {
		w.WriteHeader(StatusClientClosedRequest) // nobody is left to answer
		return
	}
	logCause(r.Context(), s.outages, e)
	WriteError(w, e)
}

// LogOutage logs that cause, a store's failure, failed the work of ctx:
// at WARN, once a minute per cause, as every 503's cause is.
func (s *Server) LogOutage(ctx context.Context, cause error) { s.outages.log(ctx, cause) }

// Now is the server's clock (Config.Now).
func (s *Server) Now() time.Time { return s.now() }

// Traffic is what the server has answered since it started: every
// response, and of those the 429s.
func (s *Server) Traffic() (requests, limited uint64) {
	return s.traffic.requests.Load(), s.traffic.limited.Load()
}
