// This file documents the body of an operation that reads it raw: the
// spec shows the JSON its handler parses, not bytes.
package api

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// WithJSONBody returns op documenting body's type as its required JSON
// request body: for an operation whose input reads the body raw (a
// RawBody []byte field, with SkipValidateBody), which parses it itself.
// The schema is named after the type as any other is, led by its
// package's name when that is a feature's.
func WithJSONBody(op huma.Operation, body any) huma.Operation {
	declare(&op, func(d *Declaration) { d.JSONBody = reflect.TypeOf(body) })
	return op
}

// declareJSONBody documents t as the body of op, which reads its body raw:
// the JSON its handler parses, not bytes. A nil t documents nothing.
func declareJSONBody(oapi *huma.OpenAPI, op *huma.Operation, t reflect.Type) {
	if t == nil || op.RequestBody == nil {
		return
	}
	op.RequestBody.Required = true
	op.RequestBody.Content = map[string]*huma.MediaType{"application/json": {Schema: oapi.Components.Schemas.Schema(t, true, op.OperationID+"Request")}}
}
