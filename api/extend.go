package api

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ratelimit"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
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
	if i := slices.IndexFunc(s.extensions, func(x extension) bool { return x.key == key }); i >= 0 {
		return s.extensions[i].value
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

// PlaneBudget returns the budget named name (StreamOpensBudget,
// StreamUserOpensBudget), or nil if there is none or limits are disabled.
func (s *Server) PlaneBudget(name string) *PlaneBudget {
	if s.planes.limits.Disabled {
		return nil
	}
	return s.planes.own[name]
}

// Budget is the budget's name and limits.
func (p *PlaneBudget) Budget() ratelimit.Budget { return p.limiter.Budget() }

// Refund gives back what d, an admitted Draw, took, for a request a later
// check refused.
func (p *PlaneBudget) Refund(ctx context.Context, key string, d *ratelimit.Decision) {
	if err := p.limiter.Refund(context.WithoutCancel(ctx), key, d); err != nil {
		Logger(ctx).Warn("a refused request's token was not given back", "budget", p.Budget().Name, "error", err)
	}
}

// Refuse answers r with e from a raw handler as an operation would: a 429
// counted and logged, a cause logged, a 499 its status only.
func (s *Server) Refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	s.planes.refusals.observe(r.Context(), e)
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

// Logger is the server's logger (Config.Logger), for work outside a request.
func (s *Server) Logger() *slog.Logger { return s.logger }

// Now is the server's clock (Config.Now).
func (s *Server) Now() time.Time { return s.now() }

// Traffic counts the responses since the server started, and the 429s.
func (s *Server) Traffic() (requests, limited uint64) {
	return s.traffic.requests.Load(), s.traffic.limited.Load()
}

// A Feature registers a feature's operations on s.API ([WithAccess],
// [WithBudget], [Tag]); [New] calls each of Config.Features in order.
type Feature func(s *Server)

// Tag declares the spec's tag name with its description, once, and returns
// the operation's Tags:
//
//	tags := api.Tag(s.API, "Bookmarks", "URLs you keep.")
func Tag(api huma.API, name, description string) []string {
	oapi := api.OpenAPI()
	if !slices.ContainsFunc(oapi.Tags, func(t *huma.Tag) bool { return t.Name == name }) {
		oapi.Tags = append(oapi.Tags, &huma.Tag{Name: name, Description: description})
	}
	return []string{name}
}

// Describe adds a paragraph on a feature to the spec's description:
//
//	api.Describe(s, "Bookmarks: keep the URLs you want to read again.")
func Describe(s *Server, text string) {
	s.described = append(s.described, text)
	s.API.OpenAPI().Info.Description = describe(s.described)
}

// MalformedBody is the 400 of a body that is not JSON, as huma answers it.
func MalformedBody(details ...FieldError) *Error {
	return NewError(http.StatusBadRequest, msgMalformedBody, details...)
}

// Metrics is the server's registry (Config.Metrics), or nil.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Logger is the logger of ctx: a request's, else [WithLogger]'s, else slog.Default.
func Logger(ctx context.Context) *slog.Logger { return middleware.Logger(ctx) }

// WithLogger returns ctx carrying l, for [Logger] outside a request.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return middleware.WithLogger(ctx, l)
}

// Router is the chi router the API is served by; routes that are no huma
// operation go on it behind [Protect].
func (s *Server) Router() chi.Router { return s.router }

// Protect declares op in the spec as an operation of api would be, and
// returns the net/http middleware that enforces that on a route added
// straight to the router (docs/routes-outside-huma.md). key, when not nil,
// counts a request within its plane by a non-empty key; take it from what is
// checked before the limiter, never from a header the handler verifies later.
func Protect(api huma.API, op huma.Operation, key func(*http.Request) string) func(http.Handler) http.Handler {
	if op.Responses == nil {
		op.Responses = map[string]*huma.Response{}
	}
	if key != nil {
		declare(&op, func(d *Declaration) { d.RateKey = key })
	}
	declared := declareOn(api, &op)
	chain := api.Middlewares()
	return func(next http.Handler) http.Handler {
		run := chain.Handler(declared.Middlewares.Handler(func(ctx huma.Context) {
			r, w := humachi.Unwrap(ctx)
			next.ServeHTTP(w, r.WithContext(ctx.Context()))
		}))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			run(humachi.NewContext(declared, r, w))
		})
	}
}

// declareOn adds op to api's spec through every group's modifiers, as
// huma.Register would.
func declareOn(api huma.API, op *huma.Operation) *huma.Operation {
	if g, ok := api.(*huma.Group); ok {
		var declared *huma.Operation
		g.ModifyOperation(op, func(op *huma.Operation) { declared = declareOn(g.API, op) })
		return declared
	}
	api.OpenAPI().AddOperation(op)
	return op
}
