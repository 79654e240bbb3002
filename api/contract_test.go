package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
)

// specDoc is the served spec, read as generic JSON, for the walks of the
// contract as a client reads it.
type specDoc struct {
	raw   map[string]any
	paths map[string]map[string]any
}

// mustServedSpec reads /openapi.json from l.
func mustServedSpec(tb testing.TB, l *apitest.Client) specDoc {
	tb.Helper()
	r := l.Call("GET", "/openapi.json", nil).Want(tb, http.StatusOK, "the spec")
	var d specDoc
	r.Decode(tb, &d.raw)
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

// concretePath fills a path's parameters with values their patterns take.
func concretePath(path string) string {
	return strings.NewReplacer("{id}", "00000000-0000-4000-8000-000000000000").Replace(path)
}

// Every operation that reads a JSON body answers a body that is not JSON
// with 400 invalid-request, as its spec's 400 says (an operation that reads
// its body itself once answered 422 unprocessable).
func TestSpecEveryBodyRefusesNonJSONWith400(t *testing.T) {
	_, l, _ := streamServer(t, api.Config{})
	ada := l.Login("ada", "correct horse battery").Cookie(t)
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
			r, err := apitest.Exchange(context.Background(), l.HTTP, method, l.URL+concretePath(path), strings.NewReader(body), ada)
			if err != nil {
				t.Fatal(err)
			}
			var env apitest.Envelope
			_ = json.Unmarshal([]byte(r.Body), &env)
			if r.Status != http.StatusBadRequest || env.Code != "invalid-request" || len(env.Details.Errors) > 1 ||
				len(env.Details.Errors) == 1 && env.Details.Errors[0].Location != "body" {
				t.Errorf("%s %s with %q: %d %.300s, want 400 invalid-request at body", method, path, body, r.Status, r.Body)
			}
		}
	})
	if n < 4 {
		t.Fatalf("only %d operations read a JSON body", n)
	}
}

// mustSpec is the spec of the default server, as generic JSON.
func mustSpec(tb testing.TB) specDoc {
	tb.Helper()
	raw, err := api.New(api.Config{Features: documented()}).Spec()
	if err != nil {
		tb.Fatal(err)
	}
	var d specDoc
	if err := json.Unmarshal(raw, &d.raw); err != nil {
		tb.Fatal(err)
	}
	d.paths = map[string]map[string]any{}
	for p, item := range d.raw["paths"].(map[string]any) {
		d.paths[p] = item.(map[string]any)
	}
	return d
}

// What a linter of OpenAPI documents (Spectral's oas ruleset) asks of the
// whole document and of every operation: a server to call, a contact,
// tags declared with a description, a description of each operation, and
// no header parameter OpenAPI ignores.
func TestSpecDocumentsEveryOperation(t *testing.T) {
	spec := mustSpec(t)
	servers, _ := spec.raw["servers"].([]any)
	if len(servers) == 0 || servers[0].(map[string]any)["url"] == "" {
		t.Errorf("servers = %v, want a server URL", spec.raw["servers"])
	}
	if c, _ := spec.raw["info"].(map[string]any)["contact"].(map[string]any); len(c) == 0 {
		t.Errorf("info.contact is missing")
	}
	declared := map[string]bool{}
	tags, _ := spec.raw["tags"].([]any)
	for _, tag := range tags {
		tag := tag.(map[string]any)
		name, _ := tag["name"].(string)
		declared[name] = true
		if d, _ := tag["description"].(string); d == "" {
			t.Errorf("tag %q has no description", name)
		}
	}
	spec.operations(func(method, path string, op map[string]any) {
		where := method + " " + path
		if d, _ := op["description"].(string); d == "" {
			t.Errorf("%s has no description", where)
		}
		if s, _ := op["summary"].(string); s == "" {
			t.Errorf("%s has no summary", where)
		}
		opTags, _ := op["tags"].([]any)
		if len(opTags) == 0 {
			t.Errorf("%s has no tag", where)
		}
		for _, tag := range opTags {
			if !declared[tag.(string)] {
				t.Errorf("%s: its tag %q is not among the spec's tags (declare it with tagged)", where, tag)
			}
		}
		params, _ := op["parameters"].([]any)
		for _, p := range params {
			p := p.(map[string]any)
			if name, _ := p["name"].(string); p["in"] == "header" && slices.Contains([]string{"accept", "content-type", "authorization"}, strings.ToLower(name)) {
				t.Errorf("%s declares the header parameter %s, which OpenAPI ignores", where, name)
			}
		}
	})
}

// The envelope's code is an enum a client can switch on exhaustively:
// every code the server sends, for every status it maps and every error
// status an operation declares, is in it, and nothing else.
func TestSpecErrorCodeIsTheEnumOfEveryCode(t *testing.T) {
	spec := mustSpec(t)
	code := spec.raw["components"].(map[string]any)["schemas"].(map[string]any)["Error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)
	enum := map[string]bool{}
	list, _ := code["enum"].([]any)
	for _, c := range list {
		enum[c.(string)] = true
	}
	if len(enum) != len(api.Codes()) {
		t.Errorf("the enum has %d codes, Codes %d", len(enum), len(api.Codes()))
	}
	for status, c := range api.StatusCodes() {
		if status != api.StatusClientClosedRequest && !enum[c] {
			t.Errorf("status %d's code %q is not in the enum", status, c)
		}
	}
	spec.operations(func(method, path string, op map[string]any) {
		for status := range op["responses"].(map[string]any) {
			n, err := strconv.Atoi(status)
			if err != nil || n < 400 {
				continue
			}
			if c := api.CodeForStatus(n); !enum[c] {
				t.Errorf("%s %s declares %d, whose code %q is not in the enum", method, path, n, c)
			}
		}
	})
}

// Every stream's 200 is text/event-stream whose schema is a string (a
// validating proxy checks the event text against it: an array made it
// answer 500), and whose x-events names a component: one of its events,
// each with event, data, id and the retry field that is sent. Every
// stream path declares the HEAD it serves.
func TestSpecStreamsAreText(t *testing.T) {
	spec := mustSpec(t)
	schemas := spec.raw["components"].(map[string]any)["schemas"].(map[string]any)
	n := 0
	spec.operations(func(method, path string, op map[string]any) {
		for status, r := range op["responses"].(map[string]any) {
			content, _ := r.(map[string]any)["content"].(map[string]any)
			mt, ok := content["text/event-stream"].(map[string]any)
			if !ok {
				continue
			}
			n++
			where := method + " " + path + " " + status
			if s, _ := mt["schema"].(map[string]any); s["type"] != "string" {
				t.Errorf("%s: the text/event-stream schema is %v, want a string", where, s)
			}
			xe, _ := mt["x-events"].(map[string]any)
			ref, _ := xe["$ref"].(string)
			events, _ := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
			oneOf, _ := events["oneOf"].([]any)
			if len(oneOf) == 0 {
				t.Errorf("%s: x-events %q is no oneOf of events", where, ref)
			}
			for _, e := range oneOf {
				props := e.(map[string]any)["properties"].(map[string]any)
				for _, member := range []string{"event", "data", "id", "retry"} {
					if props[member] == nil {
						t.Errorf("%s: an event of %s has no %s", where, ref, member)
					}
				}
			}
			if method == "GET" && spec.paths[path]["head"] == nil {
				t.Errorf("%s: the stream serves HEAD, which the spec does not declare", where)
			}
		}
	})
	if n < 2 { // the platform's: the events and the live snapshot
		t.Fatalf("%d stream responses", n)
	}
}
