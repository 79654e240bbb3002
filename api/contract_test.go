package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// specDoc is the served spec, read as generic JSON, for the walks of the
// contract as a client reads it.
type specDoc struct {
	raw   map[string]any
	paths map[string]map[string]any
}

// mustServedSpec reads /openapi.json from l.
func mustServedSpec(tb testing.TB, l *live) specDoc {
	tb.Helper()
	r := l.call("GET", "/openapi.json", nil).want(tb, http.StatusOK, "the spec")
	var d specDoc
	r.decode(tb, &d.raw)
	d.paths = map[string]map[string]any{}
	for p, item := range d.raw["paths"].(map[string]any) {
		d.paths[p] = item.(map[string]any)
	}
	return d
}

// operations calls f for every operation of the spec.
func (d specDoc) operations(f func(method, path string, op map[string]any)) {
	for path, item := range d.paths {
		for method, op := range item {
			if o, ok := op.(map[string]any); ok && method != "parameters" {
				f(strings.ToUpper(method), path, o)
			}
		}
	}
}

// schema resolves a $ref to a component schema.
func (d specDoc) schema(s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		return d.raw["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	}
	return s
}

// concretePath fills a path's parameters with values their patterns take.
func concretePath(path string) string {
	return strings.NewReplacer("{id}", "00000000-0000-4000-8000-000000000000").Replace(path)
}

// Every operation that reads a JSON body answers a body that is not JSON
// with 400 invalid-request, as its spec's 400 says; ingest, which reads
// its body itself, answered 422 unprocessable.
func TestSpecEveryBodyRefusesNonJSONWith400(t *testing.T) {
	l, _, ada := memoryServer(t)
	spec := mustServedSpec(t, l)
	n := 0
	spec.operations(func(method, path string, op map[string]any) {
		rb, _ := op["requestBody"].(map[string]any)
		if rb == nil {
			return
		}
		if _, ok := rb["content"].(map[string]any)["application/json"]; !ok {
			return
		}
		n++
		responses := op["responses"].(map[string]any)
		if _, ok := responses["400"]; !ok {
			t.Errorf("%s %s reads a JSON body and declares no 400", method, path)
		}
		for _, body := range []string{`{"project":`, `{"items":[}`, `{} {}`, ``} {
			r, err := exchange(context.Background(), l.client, method, l.url+concretePath(path), strings.NewReader(body), ada)
			if err != nil {
				t.Fatal(err)
			}
			var env envelope
			_ = json.Unmarshal([]byte(r.body), &env)
			if r.status != http.StatusBadRequest || env.Code != "invalid-request" || len(env.Details.Errors) > 1 ||
				len(env.Details.Errors) == 1 && env.Details.Errors[0].Location != "body" {
				t.Errorf("%s %s with %q: %d %.300s, want 400 invalid-request at body", method, path, body, r.status, r.body)
			}
		}
	})
	if n < 4 {
		t.Fatalf("only %d operations read a JSON body", n)
	}
}
