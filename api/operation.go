// This file is an operation's declaration: what an operation says about
// itself beyond huma's Operation, kept in one value, and the one hook that
// turns it into the spec and into the middleware that enforces it.
package api

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/internal/product"
)

// A Declaration is what an operation declares beyond huma's Operation:
// who may call it, what it draws from, how its body is read. An operation
// gets one from the helpers that set each field where it is registered —
// [WithAccess], [WithBudget], [WithJSONBody], [WithLoginBackoff] — and
// [New]'s one OnAddOperation hook reads it once, when the operation is
// added, to write the spec (security, error responses, x-rate-limit,
// headers) and to give the operation the middleware that enforces exactly
// what the spec then says.
type Declaration struct {
	// Access is who may call it; "" is Caller (fail closed), which
	// TestEveryOperationDeclaresAccess refuses in the server.
	Access Access
	// Budget, when it has a Name, is what its API-key callers draw from
	// instead of the key's default budget.
	Budget Budget
	// JSONBody is the type the handler of an operation that reads its
	// body raw parses it as, documented as the request body.
	JSONBody reflect.Type
	// LoginBackoff says the handler checks the login back-off before the
	// request is charged to its plane ([ChargeNow], [SkipCharge]).
	LoginBackoff bool
	// RateKey, when not nil, is what a request is counted by within its
	// plane ([Protect]).
	RateKey func(*http.Request) string

	// Caps are the concurrency caps the operation's handler holds its
	// requests to (open streams per caller, say), listed first in
	// x-rate-limit with their sizes. An operation that declares Caps or
	// Draws admits its requests itself, in its handler: no budget of the
	// session, ip or API-key planes is charged for it, but its callers'
	// 401s (the ip plane's) and, on an Admin operation, their 403s (the
	// caller's session or key budget), as for any operation.
	Caps []ConcurrencyCap
	// Draws names the plane budgets the operation's handler draws each
	// request from, in order ([Server.PlaneBudget]), listed so in
	// x-rate-limit after Caps: [StreamOpensBudget] and
	// [StreamUserOpensBudget] are those there are.
	Draws []string
	// bodyLimit is the largest body the operation accepts, that many bytes
	// included; 0 when it reads none. Set when the operation is added.
	bodyLimit int64
	// schemas is the registry the operation's body schema is in, for the
	// places of validation errors. Set when the operation is added.
	schemas huma.Registry
}

// metaDeclaration is the Operation.Metadata key of an operation's
// *Declaration. Metadata never reaches the spec.
const metaDeclaration = product.Name + ".declaration"

// undeclared is the declaration of an operation that declares nothing.
var undeclared = &Declaration{}

// declarationOf returns op's declaration, which the caller must not
// change (use declare).
func declarationOf(op *huma.Operation) *Declaration {
	if op == nil {
		return undeclared
	}
	if d, ok := op.Metadata[metaDeclaration].(*Declaration); ok {
		return d
	}
	return undeclared
}

// access is d's Access, Caller when it declares none.
func (d *Declaration) access() Access {
	if d.Access == "" {
		return Caller
	}
	return d.Access
}

// declare changes op's declaration by change, in a copy: op's Metadata map
// and its declaration may be shared with other operations (a literal
// reused, a group's modifier), so neither is written in place.
func declare(op *huma.Operation, change func(*Declaration)) {
	d := *declarationOf(op)
	change(&d)
	op.Metadata = maps.Clone(op.Metadata)
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[metaDeclaration] = &d
}

// WithDeclaration returns op declaring d, in place of what it declared:
// for an operation added to the spec outside huma.Register and the
// helpers above, whose door sets every field itself (package streams
// declares each stream so, with its caps and the budget it draws from).
func WithDeclaration(op huma.Operation, d Declaration) huma.Operation {
	declare(&op, func(old *Declaration) { *old = d })
	return op
}

// WithLoginBackoff returns op checking the login back-off from its
// handler before the request is charged (see [ChargeNow] and
// [SkipCharge]): an operation that checks a password, whose back-off
// refusal must take no token from any budget. The spec then shows the
// back-off in x-rate-limit, and a 429 that may come without budget headers.
func WithLoginBackoff(op huma.Operation) huma.Operation {
	declare(&op, func(d *Declaration) { d.LoginBackoff = true })
	return op
}

// declareOperation is the one OnAddOperation hook. It reads op's
// declaration and writes, in this order (each step reads what the one
// before it wrote):
//
//  1. the security requirement, and the 401/403/503 it implies, into
//     op.Errors (security.go);
//  2. the JSON schema of a body read raw (jsonbody.go);
//  3. a response with the envelope for every status in op.Errors and
//     those any operation with parameters or a body can give (spec.go);
//  4. the body limit, exact (body.go).
//
// Then the operation's own middleware, in the order a request meets it
// (after requireCaller, which every operation runs):
//
//  5. room for a large body (body.go), so that a body refused for room
//     costs its caller nothing from a budget;
//  6. the rate limits, with x-rate-limit, the 429 and the headers in the
//     spec (ratelimit.go);
//  7. the body's declared length and charset (body.go), and the refusal
//     of a number or boolean query parameter sent empty (params.go),
//     which huma would take for one left out: refused as huma's own
//     validation is, after the rate limits, so their answers carry the
//     same headers.
func declareOperation(ps *planes, bodies *bodiesInFlight) func(*huma.OpenAPI, *huma.Operation) {
	return func(oapi *huma.OpenAPI, op *huma.Operation) {
		ownFields(op)
		declare(op, func(d *Declaration) {
			declareSecurity(op, d.access())
			declareJSONBody(oapi, op, d.JSONBody)
			declareErrors(op)
			d.bodyLimit = limitBody(op)
			bodies.declare(op, d.bodyLimit)
			ps.declareRateLimits(op, d)
			bodies.check(op, d.bodyLimit)
			refuseEmptyParams(op, ps)
			d.schemas = oapi.Components.Schemas
		})
	}
}

// ownFields gives op its own copies of what the hook writes into: an
// operation literal registered twice, or built from another, may share
// these with it, and neither may see the other's errors, middleware,
// extensions or body.
func ownFields(op *huma.Operation) {
	op.Errors = slices.Clip(op.Errors)
	op.Middlewares = slices.Clip(op.Middlewares)
	op.Extensions = maps.Clone(op.Extensions)
	if op.RequestBody != nil {
		rb := *op.RequestBody
		op.RequestBody = &rb
	}
}

// inSpecOnly is the router's huma adapter. It refuses to serve a Hidden
// operation, and [Server.Err] reports it: huma calls the OnAddOperation
// hooks only for an operation it adds to the spec, so a hidden one would
// run with no rate limits and no body bound, whatever it declares, and
// the spec is to say what the server enforces.
type inSpecOnly struct {
	huma.Adapter
	errs []error
}

// Handle serves op, unless it is Hidden.
func (a *inSpecOnly) Handle(op *huma.Operation, handler func(huma.Context)) {
	if op.Hidden {
		a.errs = append(a.errs, fmt.Errorf("operation %s is Hidden, so huma never applies its declaration (budgets, body bound): it is not served; put it in the spec", op.OperationID))
		return
	}
	a.Adapter.Handle(op, handler)
}
