package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// Router is the chi router the API is served by, with its middleware in
// front. Routes that are no huma operation go on it behind [Protect].
func (s *Server) Router() chi.Router { return s.router }

// Protect declares op in the spec as an operation of api would be (access,
// budget, security, 401 and 429, rate-limit headers), and returns the
// net/http middleware that enforces exactly that on a route added straight
// to the router. Declare op's Method, Path and success responses:
//
//	callers := api.WithAccess(s.API, api.Caller)
//	download := api.WithBudget(huma.Operation{OperationID: "download-export", Method: http.MethodGet,
//		Path: "/api/v1/exports/{id}", Responses: map[string]*huma.Response{"200": {Description: "The export, as a file."}}}, exportBudget)
//	s.Router().With(api.Protect(callers, download, nil)).Get("/api/v1/exports/{id}", serveExport)
//
// key, when not nil, is what a request is counted by within its caller's
// plane, apart from the plane's own keys ("" keeps the usual key). It is
// charged before the handler runs, so take it from what is checked before
// the limiter (a client certificate's subject), never from a header the
// handler verifies later, or each client picks a fresh budget.
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

// declareOn adds op to api's spec as huma.Register would, through every
// group's modifiers, and returns it as declared.
func declareOn(api huma.API, op *huma.Operation) *huma.Operation {
	if g, ok := api.(*huma.Group); ok {
		var declared *huma.Operation
		g.ModifyOperation(op, func(op *huma.Operation) { declared = declareOn(g.API, op) })
		return declared
	}
	api.OpenAPI().AddOperation(op)
	return op
}
