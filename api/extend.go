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

// An Extension is the state a package keeps on the server
// ([Server.Extension]); [Server.Err] reports its Err.
type Extension interface {
	Err() error
}

type extension struct {
	key   any
	value Extension
}

// Extension returns the extension of s under key (of an unexported type of
// your own), made by make on the first call.
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

// RequireCaller resolves the caller as every operation does, for a raw
// handler. When it is refused it answers and returns nil; on a Public or
// Probe operation it returns nil and answers nothing.
func (s *Server) RequireCaller(ctx huma.Context) *auth.Identity {
	var id *auth.Identity
	s.requireCaller(ctx, func(ctx huma.Context) { id = auth.FromContext(ctx.Context()) })
	return id
}

// Authenticate returns the caller r's credentials name now, answering
// nothing: for a stream that checks its credentials still hold.
func (s *Server) Authenticate(ctx context.Context, r *http.Request) (*auth.Identity, error) {
	return resolveCaller(ctx, s.auth, r)
}

// A PlaneBudget is a budget of the stream plane that a handler draws from
// itself (Declaration.Draws), with the store, metrics and 429 of every budget.
type PlaneBudget struct {
	p *budgetLimiter
}

// PlaneBudget returns the budget named name (StreamOpensBudget,
// StreamUserOpensBudget), or nil if there is none or limits are disabled.
func (s *Server) PlaneBudget(name string) *PlaneBudget {
	p := s.planes.planeBudget(name)
	if p == nil || s.planes.limits.Disabled {
		return nil
	}
	return &PlaneBudget{p}
}

// Budget is the budget's name and limits.
func (b *PlaneBudget) Budget() ratelimit.Budget { return b.p.limiter.Budget() }

// Draw asks the budget to admit one request for key and counts the
// decision, whose headers the caller writes; the refusal is 429, 503 or 499.
func (b *PlaneBudget) Draw(ctx context.Context, key string) (ratelimit.Decision, *Error) {
	d, err := b.p.limiter.Allow(ctx, key)
	switch {
	case err != nil && clientGone(ctx):
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

// Refund gives back what d, an admitted Draw, took, for a request a later
// check refused.
func (b *PlaneBudget) Refund(ctx context.Context, key string, d *ratelimit.Decision) {
	if err := b.p.limiter.Refund(context.WithoutCancel(ctx), key, d); err != nil {
		logger(ctx).Warn("a refused request's token was not given back", "budget", b.p.limiter.Budget().Name, "error", err)
	}
}

// Refuse answers r with e from a raw handler as an operation would: a 429
// counted and logged, a cause logged, a 499 its status only.
func (s *Server) Refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	s.planes.refusals.observe(r.Context(), e, nil)
	if e.status == StatusClientClosedRequest {
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	logCause(r.Context(), s.outages, e)
	WriteError(w, e)
}

// LogOutage logs cause, a store's failure, as every 503's cause is: at WARN,
// once a minute per cause.
func (s *Server) LogOutage(ctx context.Context, cause error) { s.outages.log(ctx, cause) }

// Now is the server's clock (Config.Now).
func (s *Server) Now() time.Time { return s.now() }

// Traffic counts the responses since the server started, and the 429s.
func (s *Server) Traffic() (requests, limited uint64) {
	return s.traffic.requests.Load(), s.traffic.limited.Load()
}
