package api

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

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
