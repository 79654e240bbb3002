// Package api assembles brain's HTTP API: huma operations on a chi router,
// the one error envelope, the middleware every request passes, and the
// OpenAPI document those operations declare.
//
// The document is data, not prose: each operation's limits, errors and
// headers are declared where it is registered, and the same declarations
// drive what the server enforces.
package api

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// Title and Version name the API in its OpenAPI document. Version is the
// contract's version, not the binary's: it changes when the API does.
const (
	Title   = product.Name
	Version = "1.0.0"
	// Prefix is the base path of every API operation.
	Prefix = "/api/v1"
)

// Check reports whether one dependency answers; a non-nil error makes
// GET /api/v1/ready answer 503. The error is logged, never sent.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Config is what [New] needs. The zero value serves the API with no
// readiness checks, logging to slog.Default.
type Config struct {
	// Logger receives the access log and internal errors.
	Logger *slog.Logger
	// Ready lists the checks GET /api/v1/ready runs.
	Ready []Check
	// BuildVersion is the binary's version, shown by GET /api/v1/health.
	BuildVersion string
	// Now defaults to time.Now.
	Now func() time.Time

	// Auth resolves callers. Nil only for documenting the API (brain
	// openapi): every operation but the public ones then answers 401.
	Auth *auth.Service
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// CORSOrigins may call from browsers, with credentials.
	CORSOrigins []string
	// Limits are the request-rate budgets; a plane's zero budget takes its
	// default (DefaultLimits), and the other fields are kept.
	Limits Limits
	// Metrics, when set, receives the rate-limit counters.
	Metrics *Metrics
	// Features add their operations, in order, after the platform's
	// operations (see [Feature]). The stream endpoints are a feature too:
	// package streams' Plane.Feature.
	Features []Feature
	// Bodies bounds the bytes of large request bodies in flight; its zero
	// value takes the defaults.
	Bodies BodyBudget

	// Static, when set, answers the GET and HEAD requests no route
	// matches, outside /api/ and /docs/: the dashboard's files (package
	// web, which cmd/brain gives here). No rate plane applies to them.
	// Nil: those requests get the 404 envelope like any other.
	Static http.Handler
	// Docs, when set, serves /docs and every path under /docs/: the
	// interactive reference (package web). Nil: /docs is the page this
	// package renders from the spec, with no script.
	Docs http.Handler
}

// Server is brain's HTTP handler. Create it with [New]; it is safe for
// concurrent use once created.
type Server struct {
	router chi.Router
	// API is the huma API the operations are registered on. Tests and forks
	// may register more operations; each picks up the same hooks. Register
	// them before serving: the spec and /docs are rendered once, on their
	// first request.
	API huma.API

	renders atomic.Int32 // of the spec and the reference page, for tests
	planes  *planes
	bodies  *bodiesInFlight
	outages *outageLog
	traffic *traffic
	metrics *Metrics
	// requireCaller is the middleware that resolves callers: huma runs it
	// for every operation, and RequireCaller for a raw handler's door.
	requireCaller func(huma.Context, func(huma.Context))
	auth          *auth.Service
	now           func() time.Time
	adapter       *inSpecOnly
	// errs are the mistakes of the features' declarations
	// (DeclareErrorCode), which Err reports.
	errs []error
	// described are the features' paragraphs of the spec's description
	// (Describe), in order.
	described []string
	// extensions are the state packages that extend the server keep on it
	// (Extension), in the order they were made.
	extensions []extension
}

// New builds the router, registers every operation and returns the server.
// The first call makes huma's errors this package's envelope
// (huma.NewError), for every huma API of the process.
func New(cfg Config) *Server {
	useEnvelope()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tr := newTraffic(cfg.Metrics)
	r := chi.NewRouter()
	r.Use(chain(cfg, tr)...)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		if cfg.Static != nil && isStatic(r) {
			if rc := chi.RouteContext(r.Context()); rc != nil {
				rc.RoutePatterns = append(rc.RoutePatterns, "/*") // the access log's route
			}
			cfg.Static.ServeHTTP(w, r)
			return
		}
		WriteError(w, NewError(http.StatusNotFound, "no route matches this path"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		// chi hands its Allow list only to its own 405 handler: rebuild it.
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allow = append(allow, m)
				if m == http.MethodGet {
					allow = append(allow, http.MethodHead) // middleware.GetHead
				}
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		WriteError(w, NewError(http.StatusMethodNotAllowed, "this method is not allowed here; the Allow header lists what is"))
	})

	hc := huma.DefaultConfig(Title, Version)
	hc.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	// No SchemaLinkTransformer: it adds a `$schema` member to every response
	// body and a Link header to every response. The envelope is exactly
	// {code, message, details}, generated clients would carry a `$schema`
	// field nobody sets, and the schemas are already in openapi.json.
	hc.CreateHooks = nil
	hc.SchemasPath = ""
	// The spec and the reference page are served by this package (spec.go,
	// docs.go) so the served bytes are the committed bytes.
	hc.OpenAPIPath = ""
	hc.DocsPath = ""
	hc.Info.Description = describe(nil)
	hc.Info.Contact = contact
	hc.Servers = servers
	hc.Formats = escapedNames(hc.Formats)
	cfg.Limits = cfg.Limits.withDefaults()
	throttle := auth.NewLoginThrottle() // what documenting without a service shows
	if cfg.Auth != nil {
		throttle = cfg.Auth.Throttle
	}
	ps := newPlanes(cfg.Limits, cfg.Metrics, cfg.Now, throttle)
	bodies := newBodiesInFlight(cfg.Bodies)
	hc.OnAddOperation = append(hc.OnAddOperation, declareOperation(ps, bodies))
	hc.Components.SecuritySchemes = securitySchemes
	declareComponents(hc.Components)
	declareUnavailable(hc.Components)
	declareNoStore(hc.Components)
	outages := newOutageLog(time.Minute, cfg.Now)
	hc.Transformers = append(hc.Transformers, logCauses(outages))

	adapter := &inSpecOnly{Adapter: humachi.NewAdapter(r)}
	api := huma.NewAPI(hc, adapter)
	s := &Server{router: r, API: api, planes: ps, outages: outages, traffic: tr, bodies: bodies,
		metrics: cfg.Metrics, auth: cfg.Auth, now: cfg.Now, adapter: adapter}
	s.requireCaller = requireCaller(api, cfg.Auth, ps, outages)
	api.UseMiddleware(s.requireCaller)
	ps.api, bodies.api = api, api
	addRoutes(api, cfg)
	for _, f := range cfg.Features {
		f(s)
	}
	s.serveDocuments(r, cfg.Docs)
	return s
}

// Err reports the mistakes in the configuration found while the
// operations registered: a budget override that is not a budget, an
// invalid budget, two operations declaring one budget differently, an
// operation accepting bodies larger than the bytes in flight allow, a
// Hidden operation (huma skips the declaration's hook for it, so it
// would run without its budgets: every operation is in the spec), an
// error code that is none (DeclareErrorCode), and those the server's
// extensions found (Extension: a stream added to a
// server no stream plane serves, say). A server with any must not serve;
// nothing panics. It sees the operations registered so far: call it after
// the last one.
func (s *Server) Err() error {
	errs := slices.Concat(s.adapter.errs, s.planes.errs, s.bodies.errs, s.errs)
	for _, x := range s.extensions {
		errs = append(errs, x.value.Err())
	}
	return errors.Join(errs...)
}

// Budgets returns the names of the budgets the operations registered so
// far declare (api.WithBudget), sorted.
func (s *Server) Budgets() []string { return slices.Sorted(maps.Keys(s.planes.ops)) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// The spec's description: what the platform is, then what each feature
// adds ([Describe]), then the envelope every error shares.
const (
	about    = product.Name + ` is an HTTP API: users sign in with a session or an API key, every operation has its rate limits, and streams carry each user's events live.`
	envelope = `Every error response has the same envelope: {"code", "message", "details"}. ` +
		"`code`" + ` is derived from the HTTP status and is stable; switch on it.`
)

// describe is the spec's description with the features' paragraphs.
func describe(features []string) string {
	return strings.Join(slices.Concat([]string{about}, features, []string{envelope}), "\n\n")
}
