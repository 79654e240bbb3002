package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
)

// TestSpecBoundsEveryInput checks that every string, array and number a
// request can carry (parameters and body members, through $refs) has
// explicit bounds in the spec, so the limits are part of the contract.
func TestSpecBoundsEveryInput(t *testing.T) {
	s := api.New(api.Config{Features: documented()})
	raw, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Schemas map[string]map[string]any }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var check func(where string, sch map[string]any)
	check = func(where string, sch map[string]any) {
		if ref, ok := sch["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if seen[name] {
				return
			}
			seen[name] = true
			sch = doc.Components.Schemas[name]
		}
		has := func(k string) bool { _, ok := sch[k]; return ok }
		switch sch["type"] {
		case "string":
			if !has("maxLength") && !has("enum") && !has("const") && sch["format"] != "date-time" {
				t.Errorf("%s: a string without maxLength", where)
			}
		case "array":
			if !has("maxItems") {
				t.Errorf("%s: an array without maxItems", where)
			}
		case "integer", "number":
			if !has("minimum") || !has("maximum") {
				t.Errorf("%s: a number without minimum and maximum", where)
			}
		}
		if items, ok := sch["items"].(map[string]any); ok {
			check(where+"[]", items)
		}
		props, _ := sch["properties"].(map[string]any)
		for name, p := range props {
			check(where+"."+name, p.(map[string]any))
		}
	}
	for path, item := range doc.Paths {
		for method, rawOp := range item {
			var op struct {
				Parameters []struct {
					Name, In string
					Schema   map[string]any
				}
				RequestBody *struct {
					Content map[string]struct{ Schema map[string]any }
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(rawOp, &op); err != nil {
				continue // not an operation
			}
			for _, p := range op.Parameters {
				check(method+" "+path+" "+p.In+"."+p.Name, p.Schema)
			}
			if op.RequestBody != nil {
				for _, c := range op.RequestBody.Content {
					check(method+" "+path+" body", c.Schema)
				}
			}
		}
	}
}
