package api

import (
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
)

// Router is the chi router the API is served by, with its middleware
// (request id, access log, client IP, CORS, CSRF) in front. Routes that are
// no huma operation, such as a webhook receiver that reads its raw body or
// a file download, are added to it behind [Protect].
func (s *Server) Router() chi.Router { return s.router }

// Protect declares op in the spec as an operation of api would be (its
// access, from the group [WithAccess] returns, and its budget, from
// [WithBudget]: security, 401 and 429 responses, the rate-limit headers,
// x-rate-limit), and returns the net/http middleware that enforces
// exactly that on a route added straight to the router: the caller is
// resolved, the request draws from the planes the declaration names, and
// a refusal is the API's 429 envelope with its headers. Declare op's
// Method and Path as the route's, and its success responses:
//
//	callers := api.WithAccess(s.API, api.Caller)
//	download := api.WithBudget(huma.Operation{OperationID: "download-export", Method: http.MethodGet,
//		Path: "/api/v1/exports/{id}", Responses: map[string]*huma.Response{"200": {Description: "The export, as a file."}}}, exportBudget)
//	s.Router().With(api.Protect(callers, download, nil)).Get("/api/v1/exports/{id}", serveExport)
//
// key, when not nil, is what a request is counted by within the plane
// its caller draws from, in place of the session, the API key or the
// client IP: a webhook receiver of Public access might count each
// sender on the ip plane's budget. Its keys are apart from the plane's
// own (no key it returns is a client IP's bucket). The request is charged
// before the handler runs, so a key must be one a client cannot choose at
// will, or each client picks a fresh budget: take it from what is checked
// before the limiter (a caller's account, a client certificate's
// subject), never from a header the handler verifies later. A request
// for which key returns "" keeps the usual key.
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

// declareOn adds op to api's spec as huma.Register would, through the
// modifiers of every group api is made of, and returns the operation as
// declared, with the middleware the hooks gave it.
func declareOn(api huma.API, op *huma.Operation) *huma.Operation {
	if g, ok := api.(*huma.Group); ok {
		var declared *huma.Operation
		g.ModifyOperation(op, func(op *huma.Operation) { declared = declareOn(g.API, op) })
		return declared
	}
	api.OpenAPI().AddOperation(op)
	return op
}
