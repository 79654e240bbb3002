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

// A Declaration is what an operation declares beyond huma's Operation, set
// by [WithAccess], [WithBudget], [WithJSONBody] and [WithLoginBackoff].
// [New]'s OnAddOperation hook turns it into the spec and into the
// middleware that enforces what the spec says.
type Declaration struct {
	// Access is who may call it; "" is Caller (fail closed).
	Access Access
	// Budget, when it has a Name, is what its API-key callers draw from
	// instead of the key's default budget.
	Budget Budget
	// JSONBody is the type a handler that reads its body raw parses it as.
	JSONBody reflect.Type
	// LoginBackoff says the handler checks the login back-off before the
	// request is charged to its plane ([ChargeNow], [SkipCharge]).
	LoginBackoff bool
	// RateKey, when not nil, is what a request is counted by within its
	// plane ([Protect]).
	RateKey func(*http.Request) string

	// Caps are the concurrency caps the operation's handler holds its
	// requests to. An operation that declares Caps or Draws admits its
	// requests itself: only its 401s and an Admin operation's 403s are
	// charged to the planes.
	Caps []ConcurrencyCap
	// Draws names the plane budgets the handler draws each request from,
	// in order ([Server.PlaneBudget]).
	Draws     []string
	bodyLimit int64         // the largest body accepted; 0: it reads none
	schemas   huma.Registry // of its body's schema, for validation errors' places
}

// metaDeclaration is the Operation.Metadata key of its *Declaration.
const metaDeclaration = product.Name + ".declaration"

// undeclared is the declaration of an operation that declares nothing.
var undeclared = &Declaration{}

// declarationOf returns op's declaration, not to be changed (use declare).
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

// declare changes op's declaration in a copy: its Metadata and declaration
// may be shared with other operations.
func declare(op *huma.Operation, change func(*Declaration)) {
	d := *declarationOf(op)
	change(&d)
	op.Metadata = maps.Clone(op.Metadata)
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	op.Metadata[metaDeclaration] = &d
}

// WithDeclaration returns op declaring d in place of what it declared: for
// an operation whose door sets every field itself (package streams').
func WithDeclaration(op huma.Operation, d Declaration) huma.Operation {
	declare(&op, func(old *Declaration) { *old = d })
	return op
}

// WithLoginBackoff returns op checking the login back-off in its handler
// before the request is charged ([ChargeNow], [SkipCharge]), so a back-off
// refusal takes no token from any budget.
func WithLoginBackoff(op huma.Operation) huma.Operation {
	declare(&op, func(d *Declaration) { d.LoginBackoff = true })
	return op
}

// declareOperation is the one OnAddOperation hook. It writes op's security,
// raw body schema, error responses and body limit into the spec, then
// gives it its middleware in the order a request meets it: room for a
// large body (a refusal for room costs no budget), the rate limits, the
// body's declared length and charset, and the refusal of empty number or
// boolean query parameters.
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

// ownFields gives op its own copies of what the hook writes into, which an
// operation literal registered twice would otherwise share.
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
// operation ([Server.Err] reports it): huma skips the hooks for one, so it
// would run with no rate limits and no body bound.
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
