// This file documents the body of an operation that reads it raw: the
// spec shows the JSON its handler parses, not bytes.
package api

import (
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/internal/product"
)

// metaJSONBody is the Operation.Metadata key of the type an operation
// that reads its body itself (RawBody) documents as its JSON body.
const metaJSONBody = product.Name + ".jsonBody"

// WithJSONBody returns op documenting body's type as its required JSON
// request body: for an operation whose input reads the body raw (a
// RawBody []byte field, with SkipValidateBody), which parses it itself.
// The schema is named after the type, less a Request suffix.
func WithJSONBody(op huma.Operation, body any) huma.Operation {
	m := make(map[string]any, len(op.Metadata)+1)
	for k, v := range op.Metadata {
		m[k] = v
	}
	m[metaJSONBody] = reflect.TypeOf(body)
	op.Metadata = m
	return op
}

// declareJSONBody is an OnAddOperation hook: an operation that reads its
// body raw documents the JSON its handler parses, not bytes.
func declareJSONBody(oapi *huma.OpenAPI, op *huma.Operation) {
	t, ok := op.Metadata[metaJSONBody].(reflect.Type)
	if !ok || op.RequestBody == nil {
		return
	}
	op.RequestBody.Required = true
	op.RequestBody.Content = map[string]*huma.MediaType{"application/json": {Schema: oapi.Components.Schemas.Schema(t, true, strings.TrimSuffix(t.Name(), "Request"))}}
}
