// Package api assembles brain's HTTP API: huma operations on a chi router,
// the one error envelope, the middleware every request passes, and the
// OpenAPI document, built from the same declarations the server enforces.
package api

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/logsample"
	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"
)

// The version is the contract's, not the binary's.
const (
	apiTitle   = product.Name
	apiVersion = "1.0.0"
	// Prefix is the base path of every API operation.
	Prefix = "/api/v1"
)

// Check reports whether one dependency answers; an error (logged, never
// sent) makes GET /api/v1/ready answer 503.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Config is what [New] needs; the zero value serves the API.
type Config struct {
	Logger       *slog.Logger // the access log and internal errors; nil: slog.Default
	Ready        []Check      // what GET /api/v1/ready runs
	BuildVersion string       // shown by GET /api/v1/health
	Now          func() time.Time

	// Auth resolves callers; nil only to document the API (brain openapi).
	Auth           *auth.Service
	TrustedProxies []netip.Prefix // the peers whose X-Forwarded-For, and traceparent, is believed
	// Tracer, when set, runs each request in a span of it (middleware.Trace).
	Tracer      trace.TracerProvider
	CORSOrigins []string // may call from browsers, with credentials
	// Limits are the request-rate budgets; a zero rate takes its default.
	Limits   Limits
	Metrics  *Metrics
	Features []Feature  // add their operations, in order, after the platform's
	Bodies   BodyBudget // bounds the large request bodies in flight

	// Static, when set, answers the GET and HEAD requests no route matches
	// outside /api/ and /docs/ (the dashboard).
	Static http.Handler
	// Docs, when set, serves /docs and below in place of the rendered page.
	Docs http.Handler
}

// Server is brain's HTTP handler, made by [New].
type Server struct {
	router chi.Router
	// API is the huma API the operations are registered on, before serving.
	API huma.API

	renders    atomic.Int32 // of the spec and the reference page, for tests
	planes     *planes
	bodies     *bodiesInFlight
	outages    *outageLog
	traffic    *traffic
	metrics    *Metrics
	auth       *auth.Service
	now        func() time.Time
	logger     *slog.Logger
	adapter    *inSpecOnly
	errs       []error     // the features' mistakes (DeclareErrorCode)
	described  []string    // the features' paragraphs of the description
	extensions []extension // in the order they were made
}

// New builds the router and registers every operation. The first call makes
// huma's errors this package's envelope, for every huma API of the process.
func New(cfg Config) *Server {
	useEnvelope()
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
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
		// chi hands its Allow list only to its own 405 handler.
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

	hc := huma.DefaultConfig(apiTitle, apiVersion)
	hc.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	hc.CreateHooks = nil // no $schema member in bodies, no Link header
	hc.SchemasPath = ""
	hc.OpenAPIPath = "" // spec.go serves the committed bytes, and the page of them
	hc.DocsPath = ""
	hc.Info.Description = describe(nil)
	hc.Info.Contact = &huma.Contact{Name: product.Name + " maintainers"}
	// one server, relative, so the spec names no host
	hc.Servers = []*huma.Server{{URL: "/", Description: "The server this document was read from."}}
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
	outages := &outageLog{logsample.New(time.Minute, cfg.Now, maxOutageCauses)}
	hc.Transformers = append(hc.Transformers, logCauses(outages))

	adapter := &inSpecOnly{Adapter: humachi.NewAdapter(r)}
	api := huma.NewAPI(hc, adapter)
	s := &Server{router: r, API: api, planes: ps, outages: outages, traffic: tr, bodies: bodies,
		metrics: cfg.Metrics, auth: cfg.Auth, now: cfg.Now, logger: cfg.Logger, adapter: adapter}
	api.UseMiddleware(s.requireCaller)
	ps.api, bodies.api = api, api
	addRoutes(api, cfg)
	for _, f := range cfg.Features {
		f(s)
	}
	s.serveDocuments(r, cfg.Docs)
	return s
}

// Err reports the configuration mistakes found while the operations
// registered; a server with any must not serve.
func (s *Server) Err() error {
	errs := slices.Concat(s.adapter.errs, s.planes.errs, s.bodies.errs, s.errs)
	for _, x := range s.extensions {
		errs = append(errs, x.value.Err())
	}
	return errors.Join(errs...)
}

// Budgets returns the names of the declared [WithBudget] budgets, sorted.
func (s *Server) Budgets() []string { return slices.Sorted(maps.Keys(s.planes.ops)) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// The spec's description: the platform, the features' ([Describe]), the envelope.
const (
	about    = product.Name + ` is an HTTP API: users sign in with a session or an API key, every operation has its rate limits, and streams carry each user's events live.`
	envelope = `Every error response has the same envelope: {"code", "message", "details"}. ` +
		"`code`" + ` is derived from the HTTP status and is stable; switch on it.`
)

func describe(features []string) string {
	return strings.Join(slices.Concat([]string{about}, features, []string{envelope}), "\n\n")
}

// chain is the router's middleware, with this package's answers.
func chain(cfg Config, tr *traffic) []func(http.Handler) http.Handler {
	return middleware.Chain(middleware.Config{
		Logger:  cfg.Logger,
		Now:     cfg.Now,
		Observe: tr.observe,
		Internal: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			WriteError(w, NewError(http.StatusInternalServerError, ""))
		}),
		TrustedProxies: cfg.TrustedProxies,
		Tracer:         cfg.Tracer,
		Origins:        cfg.CORSOrigins,
		CSRFExempt:     func(r *http.Request) bool { return apiKeyFrom(r) != "" }, // an API key is no cookie
		CrossSite: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			WriteError(w, NewError(http.StatusForbidden, "cross-site request refused: a cookie-authenticated change must come from "+product.Name+"'s own pages or a trusted origin"))
		}),
	})
}

// isStatic reports whether a request no route matched is one for
// Config.Static: a GET or HEAD outside /api/ and /docs/, however spelled
// ("/x/../api/v1" and "/api%2fv1" are the API's).
func isStatic(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range []string{r.URL.Path, path.Clean("/" + r.URL.Path)} {
		for _, reserved := range []string{"/api", "/docs"} {
			if p == reserved || strings.HasPrefix(p, reserved+"/") {
				return false
			}
		}
	}
	return true
}

// addRoutes registers the platform's own operations, the probes. Every
// other operation comes in by Config.Features.
func addRoutes(api huma.API, cfg Config) {
	probes := WithAccess(api, Probe)
	tags := Tag(api, "Operations", "Probes for whoever runs the service: is it alive, and can it serve.")
	huma.Register(probes, huma.Operation{
		OperationID: "get-health",
		Method:      http.MethodGet,
		Path:        Prefix + "/health",
		Summary:     "Liveness probe",
		Description: "Answers 200 while the process serves HTTP. Never rate limited.",
		Tags:        tags,
	}, handleHealth(cfg.BuildVersion))

	huma.Register(probes, huma.Operation{
		OperationID: "get-ready",
		Method:      http.MethodGet,
		Path:        Prefix + "/ready",
		Summary:     "Readiness probe",
		Description: "Answers 200 only when every store " + product.Name + " depends on answers, else 503 with the failing checks in details.errors. Never rate limited.",
		Tags:        tags,
		Errors:      []int{http.StatusServiceUnavailable},
	}, handleReady(cfg.Ready))
}

// healthOutput is the body of GET /api/v1/health.
type healthOutput struct {
	Body struct {
		Status  string `json:"status" enum:"ok" doc:"Always ok while the server answers."`
		Version string `json:"version" example:"v1.2.3" doc:"The server binary's version."`
	}
}

func handleHealth(version string) func(context.Context, *struct{}) (*healthOutput, error) {
	version = cmp.Or(version, "dev")
	return func(ctx context.Context, _ *struct{}) (*healthOutput, error) {
		out := &healthOutput{}
		out.Body.Status = "ok"
		out.Body.Version = version
		return out, nil
	}
}

// readyOutput is the body of GET /api/v1/ready.
type readyOutput struct {
	Body struct {
		Status string   `json:"status" enum:"ready" doc:"Always ready on a 200."`
		Checks []string `json:"checks" nullable:"false" example:"database" doc:"The checks that passed."`
	}
}

// readyTimeout bounds one readiness check, so a hung store answers 503
// before the prober gives up.
const readyTimeout = 2 * time.Second

func handleReady(checks []Check) func(context.Context, *struct{}) (*readyOutput, error) {
	return func(ctx context.Context, _ *struct{}) (*readyOutput, error) {
		out := &readyOutput{}
		out.Body.Status = "ready"
		out.Body.Checks = []string{}
		var failed []FieldError
		for _, c := range checks {
			cctx, cancel := context.WithTimeout(ctx, readyTimeout)
			err := c.Check(cctx)
			cancel()
			if err != nil {
				Logger(ctx).Warn("readiness check failed", "check", c.Name, "error", err)
				failed = append(failed, FieldError{Location: "checks." + c.Name, Message: "not answering"})
				continue
			}
			out.Body.Checks = append(out.Body.Checks, c.Name)
		}
		if len(failed) > 0 {
			return nil, NewError(http.StatusServiceUnavailable, product.Name+" is not ready: a store does not answer", failed...)
		}
		return out, nil
	}
}
