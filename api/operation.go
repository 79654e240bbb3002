package api

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"

	"github.com/brain-template/brain/internal/product"
	"github.com/danielgtaylor/huma/v2"
)

// A Declaration is what an operation declares beyond huma's Operation
// ([WithAccess], [WithBudget], ...); it becomes both the spec and the
// middleware that enforces it.
type Declaration struct {
	Access       Access                     // who may call it; "" is Caller
	Budget       Budget                     // what API-key callers draw from, when named
	JSONBody     reflect.Type               // the type a handler that reads its body raw parses
	LoginBackoff bool                       // the handler checks the login back-off before the charge
	RateKey      func(*http.Request) string // when not nil, keys the request's budget ([Protect])

	// Caps are the concurrency caps its handler holds requests to. With
	// Caps or Draws the handler admits its requests itself.
	Caps      []ConcurrencyCap
	Draws     []string      // the budgets the handler draws from ([Server.PlaneBudget])
	bodyLimit int64         // the largest body accepted; 0: it reads none
	schemas   huma.Registry // of its body's schema, for validation errors' places
}

const metaDeclaration = product.Name + ".declaration"

var undeclared = &Declaration{}

// declarationOf returns op's declaration, not to be changed (use declare).
func declarationOf(op *huma.Operation) *Declaration {
	if d, ok := op.Metadata[metaDeclaration].(*Declaration); ok {
		return d
	}
	return undeclared
}

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

// WithDeclaration returns op declaring d in place of what it declared.
func WithDeclaration(op huma.Operation, d Declaration) huma.Operation {
	declare(&op, func(old *Declaration) { *old = d })
	return op
}

// WithLoginBackoff returns op checking the login back-off in its handler
// before the request is charged ([ChargeNow], [SkipCharge]).
func WithLoginBackoff(op huma.Operation) huma.Operation {
	declare(&op, func(d *Declaration) { d.LoginBackoff = true })
	return op
}

// declareOperation is the OnAddOperation hook: it writes op's declaration
// into the spec, and adds its middleware in the order a request meets it.
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

// ownFields copies what the hook writes into, which an operation literal
// registered twice would share.
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
// operation, which huma's hooks skip.
type inSpecOnly struct {
	huma.Adapter
	errs []error
}

func (a *inSpecOnly) Handle(op *huma.Operation, handler func(huma.Context)) {
	if op.Hidden {
		a.errs = append(a.errs, fmt.Errorf("operation %s is Hidden, so huma never applies its declaration (budgets, body bound): it is not served; put it in the spec", op.OperationID))
		return
	}
	a.Adapter.Handle(op, handler)
}

// Access is who may call an operation, declared by registering it on the
// group [WithAccess] returns; its security, errors and budgets follow.
type Access string

const (
	Probe   Access = "probe"   // anyone, never rate limited (health and readiness)
	Public  Access = "public"  // anyone; each client address has the ip budget
	Caller  Access = "caller"  // a logged-in session or an API key
	Session Access = "session" // a logged-in session only; an API key gets 403
	Admin   Access = "admin"   // a user with the admin role, by session or API key
)

// WithAccess returns a group of api whose operations declare access a.
func WithAccess(api huma.API, a Access) huma.API {
	g := huma.NewGroup(api)
	g.UseSimpleModifier(func(op *huma.Operation) {
		declare(op, func(d *Declaration) { d.Access = a })
	})
	return g
}

// WithJSONBody returns op documenting body's type as its required JSON
// request body, for an operation that reads its body raw and parses it.
func WithJSONBody(op huma.Operation, body any) huma.Operation {
	declare(&op, func(d *Declaration) { d.JSONBody = reflect.TypeOf(body) })
	return op
}

// declareJSONBody documents t, if not nil, as the body of op.
func declareJSONBody(oapi *huma.OpenAPI, op *huma.Operation, t reflect.Type) {
	if t == nil || op.RequestBody == nil {
		return
	}
	op.RequestBody.Required = true
	op.RequestBody.Content = map[string]*huma.MediaType{"application/json": {Schema: oapi.Components.Schemas.Schema(t, true, op.OperationID+"Request")}}
}

// refuseEmptyParams answers 422 to an empty number or boolean query
// parameter ("?limit="), which huma would take for one left out.
func refuseEmptyParams(op *huma.Operation, ps *planes) {
	var names []string
	for _, p := range op.Parameters {
		if p.In == "query" && p.Schema != nil && (p.Schema.Type == huma.TypeInteger || p.Schema.Type == huma.TypeNumber || p.Schema.Type == huma.TypeBoolean) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
		u := ctx.URL()
		if u.RawQuery == "" {
			next(ctx)
			return
		}
		var empty []FieldError
		query := u.Query()
		for _, name := range names {
			if v, ok := query[name]; ok && v[0] == "" { // huma reads the first value
				empty = append(empty, FieldError{Location: "query." + name, Message: "empty: send a value, or leave the parameter out for its default"})
			}
		}
		if len(empty) > 0 {
			writeHumaError(ps.api, ctx, NewError(http.StatusUnprocessableEntity, "the request is not valid: see details.errors", empty...))
			return
		}
		next(ctx)
	})
}
