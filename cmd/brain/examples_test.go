package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

// specAPI is the spec brain openapi prints, as huma holds it.
func specAPI(t *testing.T) *huma.OpenAPI {
	t.Helper()
	s, err := newServer(defaultConfig(), slog.New(slog.DiscardHandler), running{})
	if err != nil {
		t.Fatal(err)
	}
	return s.API.OpenAPI()
}

// specOperation is one operation of the spec, named "GET /path".
type specOperation struct {
	name string
	op   *huma.Operation
}

func specOperations(oapi *huma.OpenAPI) []specOperation {
	var ops []specOperation
	for path, item := range oapi.Paths {
		for method, op := range map[string]*huma.Operation{"GET": item.Get, "HEAD": item.Head, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete} {
			if op != nil {
				ops = append(ops, specOperation{method + " " + path, op})
			}
		}
	}
	slices.SortFunc(ops, func(a, b specOperation) int { return strings.Compare(a.name, b.name) })
	return ops
}

// sharedResponse is r, or the shared response it refers to.
func sharedResponse(oapi *huma.OpenAPI, r *huma.Response) *huma.Response {
	if r.Ref != "" {
		return oapi.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
	}
	return r
}

// contentSchema is the schema a media type's body has: for a stream, the
// schema its x-events names (each message), else its own.
func contentSchema(mt *huma.MediaType) *huma.Schema {
	if ev, ok := mt.Extensions["x-events"].(map[string]any); ok {
		return &huma.Schema{Ref: ev["$ref"].(string)}
	}
	return mt.Schema
}

// unexemplified lists the places under s (at) that have no example, by the
// rule Swagger UI's "Try it out" and Prism's mock responses follow when they
// make up a value: a schema's own examples, else its default or its enum's
// first value, else, for an object, a value built from every property (the
// optional ones too: both fill them all in), for an array, one item, for a
// oneOf, the first branch (each must have one: any may be the answer).
// Whatever has none of these is made up from the type and pattern: garbage.
func unexemplified(reg huma.Registry, s *huma.Schema, at string) []string {
	for s != nil && s.Ref != "" {
		s = reg.SchemaFromRef(s.Ref)
	}
	switch {
	case s == nil:
		return []string{at + " (no schema)"}
	case len(s.Examples) > 0 || s.Default != nil || len(s.Enum) > 0:
		return nil
	case len(s.OneOf) > 0:
		var missing []string
		for i, one := range s.OneOf {
			missing = append(missing, unexemplified(reg, one, fmt.Sprintf("%s(oneOf %d: %s)", at, i, one.Title))...)
		}
		return missing
	case s.Type == huma.TypeArray:
		return unexemplified(reg, s.Items, at+"[]")
	case s.Type == huma.TypeObject && len(s.Properties) > 0:
		var missing []string
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			missing = append(missing, unexemplified(reg, s.Properties[name], at+"."+name)...)
		}
		return missing
	}
	return []string{at}
}

// TestSpecExamples: every parameter, request body and response body of the
// spec (2xx and error envelopes alike, a stream's messages included) has an
// example, on itself or by the rule of unexemplified, so the docs' "Try it
// out", generated clients and mock servers show real-looking data.
func TestSpecExamples(t *testing.T) {
	oapi := specAPI(t)
	reg := oapi.Components.Schemas
	var missing []string
	check := func(where string, hasOwn bool, s *huma.Schema) {
		if hasOwn {
			return
		}
		for _, m := range unexemplified(reg, s, "") {
			missing = append(missing, where+": "+strings.TrimPrefix(m, "."))
		}
	}
	for _, o := range specOperations(oapi) {
		for _, p := range o.op.Parameters {
			check(fmt.Sprintf("%s parameter %s.%s", o.name, p.In, p.Name), p.Example != nil || len(p.Examples) > 0, p.Schema)
		}
		if rb := o.op.RequestBody; rb != nil {
			for ct, mt := range rb.Content {
				check(o.name+" request body "+ct, mt.Example != nil || len(mt.Examples) > 0, mt.Schema)
			}
		}
		for status, r := range o.op.Responses {
			for ct, mt := range sharedResponse(oapi, r).Content {
				check(o.name+" response "+status+" "+ct, mt.Example != nil || len(mt.Examples) > 0, contentSchema(mt))
			}
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	if len(missing) > 0 {
		t.Errorf("%d places in the spec have no example (add an example tag beside the field, or Examples on the type's schema):\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// TestSpecExamplesValidate: every example in the spec is valid by its own
// schema, as huma validates a request: an example that is not is worse
// than none.
func TestSpecExamplesValidate(t *testing.T) {
	oapi := specAPI(t)
	reg := oapi.Components.Schemas
	// each visits the schemas of the spec: the components, then each
	// operation's, the schemas within them included (a reference is visited
	// where it is declared, in the components), with their examples and mode.
	each := func(visit func(where string, s *huma.Schema, mode huma.ValidateMode, examples []any)) {
		var walk func(where string, s *huma.Schema, mode huma.ValidateMode)
		walk = func(where string, s *huma.Schema, mode huma.ValidateMode) {
			if s == nil {
				return
			}
			visit(where, s, mode, s.Examples)
			for name, p := range s.Properties {
				walk(where+"."+name, p, mode)
			}
			walk(where+"[]", s.Items, mode)
			if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
				walk(where+"{}", ap, mode)
			}
			for i, sub := range slices.Concat(s.OneOf, s.AnyOf, s.AllOf) {
				walk(fmt.Sprintf("%s(%d)", where, i), sub, mode)
			}
		}
		media := func(where string, mt *huma.MediaType, mode huma.ValidateMode) {
			var examples []any
			if mt.Example != nil {
				examples = append(examples, mt.Example)
			}
			for _, e := range mt.Examples {
				examples = append(examples, e.Value)
			}
			visit(where, contentSchema(mt), mode, examples)
			walk(where, mt.Schema, mode)
		}
		for name, s := range reg.Map() {
			walk("schema "+name, s, huma.ModeReadFromServer)
			walk("schema "+name, s, huma.ModeWriteToServer)
		}
		for _, o := range specOperations(oapi) {
			for _, p := range o.op.Parameters {
				where := fmt.Sprintf("%s parameter %s.%s", o.name, p.In, p.Name)
				if p.Example != nil {
					visit(where, p.Schema, huma.ModeWriteToServer, []any{p.Example})
				}
				walk(where, p.Schema, huma.ModeWriteToServer)
			}
			if rb := o.op.RequestBody; rb != nil {
				for ct, mt := range rb.Content {
					media(o.name+" request body "+ct, mt, huma.ModeWriteToServer)
				}
			}
			for status, r := range o.op.Responses {
				for ct, mt := range sharedResponse(oapi, r).Content {
					media(o.name+" response "+status+" "+ct, mt, huma.ModeReadFromServer)
				}
			}
		}
	}
	// Validate checks a pattern only once the schema's messages are
	// computed, which a schema written by hand has not had.
	each(func(_ string, s *huma.Schema, _ huma.ValidateMode, _ []any) { s.PrecomputeMessages() })
	n := 0
	each(func(where string, s *huma.Schema, mode huma.ValidateMode, examples []any) {
		for _, example := range examples {
			n++
			b, err := json.Marshal(example)
			if err != nil {
				t.Errorf("%s: example %v: %v", where, example, err)
				continue
			}
			var v any // as a client would send it, or read it
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			res := &huma.ValidateResult{}
			huma.Validate(reg, s, huma.NewPathBuffer([]byte{}, 0), mode, v, res)
			for _, e := range res.Errors {
				t.Errorf("%s: example %s is not valid: %v", where, b, e)
			}
		}
	})
	if n == 0 {
		t.Fatal("the spec has no examples to validate")
	}
}
