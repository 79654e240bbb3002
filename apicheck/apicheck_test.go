package apicheck_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/apicheck"
)

// brainSpec is the real document of the API, the base every case edits.
func brainSpec(tb testing.TB) []byte {
	tb.Helper()
	b, err := api.New(api.Config{Logger: slog.New(slog.DiscardHandler)}).Spec()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// edit decodes spec, applies f to it and encodes it again.
func edit(tb testing.TB, spec []byte, f func(doc map[string]any)) []byte {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(spec, &doc); err != nil {
		tb.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// at walks doc along keys, creating nothing.
func at(doc map[string]any, keys ...string) map[string]any {
	cur := doc
	for _, k := range keys {
		cur = cur[k].(map[string]any)
	}
	return cur
}

func ids(fs []apicheck.Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.ID+" "+f.Method+" "+f.Path)
	}
	return strings.Join(s, "; ")
}

func TestCheckUnchanged(t *testing.T) {
	spec := brainSpec(t)
	fs, err := apicheck.Check(spec, spec)
	if err != nil || len(fs) != 0 {
		t.Fatalf("Check(spec, spec) = %s, %v; want nothing", ids(fs), err)
	}
}

func TestCheckBreakingChanges(t *testing.T) {
	base := brainSpec(t)
	tests := []struct {
		name string
		edit func(doc map[string]any)
		want string // a finding id, method and path
	}{
		{"operation_removed", func(doc map[string]any) {
			delete(at(doc, "paths"), "/api/v1/ready")
		}, "api-path-removed-without-deprecation GET /api/v1/ready"},
		{"response_property_type_changed", func(doc map[string]any) {
			at(doc, "components", "schemas", "HealthOutputBody", "properties", "version")["type"] = "integer"
		}, "response-property-type-changed GET /api/v1/health"},
		{"required_query_parameter_added", func(doc map[string]any) {
			at(doc, "paths", "/api/v1/health", "get")["parameters"] = []any{map[string]any{
				"name": "verbose", "in": "query", "required": true, "schema": map[string]any{"type": "boolean"},
			}}
		}, "new-required-request-parameter GET /api/v1/health"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := apicheck.Check(base, edit(t, base, tc.edit))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ids(fs), tc.want) {
				t.Fatalf("findings = %q, want %q among them", ids(fs), tc.want)
			}
		})
	}
}

func TestCheckAdditiveChangesPass(t *testing.T) {
	base := brainSpec(t)
	tests := []struct {
		name string
		edit func(doc map[string]any)
	}{
		{"operation_added", func(doc map[string]any) {
			at(doc, "paths")["/api/v1/new"] = at(doc, "paths", "/api/v1/health")
		}},
		{"optional_response_property_added", func(doc map[string]any) {
			at(doc, "components", "schemas", "HealthOutputBody", "properties")["uptime_s"] = map[string]any{"type": "integer"}
		}},
		{"optional_query_parameter_added", func(doc map[string]any) {
			at(doc, "paths", "/api/v1/health", "get")["parameters"] = []any{map[string]any{
				"name": "verbose", "in": "query", "schema": map[string]any{"type": "boolean"},
			}}
		}},
		{"description_changed", func(doc map[string]any) {
			at(doc, "paths", "/api/v1/health", "get")["description"] = "Still alive."
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := apicheck.Check(base, edit(t, base, tc.edit))
			if err != nil || len(fs) != 0 {
				t.Fatalf("findings = %q, %v; want none", ids(fs), err)
			}
		})
	}
}

// limited plants on GET /api/v1/health what the rate-limit issue declares
// for real: a budget list, a 429 through a shared response, and the
// headers on the 200.
func limited(doc map[string]any) {
	header := func() any { return map[string]any{"required": true, "schema": map[string]any{"type": "string"}} }
	at(doc, "components", "responses")["RateLimited"] = map[string]any{
		"description": "rate-limited",
		"headers":     map[string]any{"Retry-After": header(), "RateLimit": header(), "RateLimit-Policy": header()},
		"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
	}
	op := at(doc, "paths", "/api/v1/health", "get")
	resps := op["responses"].(map[string]any)
	resps["429"] = map[string]any{"$ref": "#/components/responses/RateLimited"}
	resps["200"].(map[string]any)["headers"] = map[string]any{"RateLimit": header(), "RateLimit-Policy": header(), "X-RateLimit-Remaining": header()}
	op["x-rate-limit"] = []any{
		map[string]any{"plane": "session", "policy": "session", "limit": 120.0, "window_s": 60.0, "burst": 60.0},
		map[string]any{"plane": "stream", "policy": "streams", "concurrent": 16.0},
		map[string]any{"plane": "login", "policy": "login", "failures": 5.0, "ip_failures": 20.0, "backoff_s": []any{1.0, 900.0}},
	}
}

func health(doc map[string]any) map[string]any { return at(doc, "paths", "/api/v1/health", "get") }

func budget(doc map[string]any, i int) map[string]any {
	return health(doc)["x-rate-limit"].([]any)[i].(map[string]any)
}

func TestCheckRateLimits(t *testing.T) {
	base := edit(t, brainSpec(t), limited)
	breaking := []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"429_removed", func(doc map[string]any) { delete(health(doc)["responses"].(map[string]any), "429") }, apicheck.IDRateLimitResponseRemoved},
		{"header_removed_from_200", func(doc map[string]any) {
			delete(health(doc)["responses"].(map[string]any)["200"].(map[string]any)["headers"].(map[string]any), "X-RateLimit-Remaining")
		}, apicheck.IDRateLimitHeaderRemoved},
		{"header_removed_behind_ref", func(doc map[string]any) {
			delete(at(doc, "components", "responses", "RateLimited", "headers"), "Retry-After")
		}, apicheck.IDRateLimitHeaderRemoved},
		{"x_rate_limit_removed", func(doc map[string]any) { delete(health(doc), "x-rate-limit") }, apicheck.IDRateLimitRemoved},
		{"x_rate_limit_emptied", func(doc map[string]any) { health(doc)["x-rate-limit"] = []any{} }, apicheck.IDRateLimitRemoved},
		{"x_rate_limit_not_a_list", func(doc map[string]any) { health(doc)["x-rate-limit"] = "none" }, apicheck.IDRateLimitRemoved},
		{"limit_lowered", func(doc map[string]any) { budget(doc, 0)["limit"] = 100.0 }, apicheck.IDRateLimitTightened},
		{"burst_lowered", func(doc map[string]any) { budget(doc, 0)["burst"] = 30.0 }, apicheck.IDRateLimitTightened},
		{"window_longer", func(doc map[string]any) { budget(doc, 0)["window_s"] = 3600.0 }, apicheck.IDRateLimitTightened},
		{"stream_cap_lowered", func(doc map[string]any) { budget(doc, 1)["concurrent"] = 8.0 }, apicheck.IDRateLimitTightened},
		{"failures_lowered", func(doc map[string]any) { budget(doc, 2)["failures"] = 3.0 }, apicheck.IDRateLimitTightened},
		{"backoff_longer", func(doc map[string]any) { budget(doc, 2)["backoff_s"] = []any{1.0, 1800.0} }, apicheck.IDRateLimitTightened},
		{"budget_added", func(doc map[string]any) {
			health(doc)["x-rate-limit"] = append(health(doc)["x-rate-limit"].([]any),
				map[string]any{"plane": "apikey", "policy": "health", "limit": 100.0, "window_s": 3600.0, "burst": 100.0})
		}, apicheck.IDRateLimitBudgetAdded},
		{"limit_added_to_unlimited_operation", func(doc map[string]any) {
			at(doc, "paths", "/api/v1/ready", "get")["x-rate-limit"] = []any{map[string]any{"plane": "ip", "policy": "ip", "limit": 30.0, "window_s": 60.0, "burst": 30.0}}
		}, apicheck.IDRateLimitBudgetAdded},
	}
	for _, tc := range breaking {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := apicheck.Check(base, edit(t, base, tc.edit))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ids(fs), tc.want) {
				t.Fatalf("findings = %q, want %s", ids(fs), tc.want)
			}
		})
	}
	loosening := []struct {
		name string
		edit func(doc map[string]any)
	}{
		{"limit_raised", func(doc map[string]any) { budget(doc, 0)["limit"] = 240.0 }},
		{"window_shorter_burst_higher", func(doc map[string]any) { budget(doc, 0)["window_s"] = 30.0; budget(doc, 0)["burst"] = 90.0 }},
		{"budget_removed", func(doc map[string]any) { health(doc)["x-rate-limit"] = health(doc)["x-rate-limit"].([]any)[:2] }},
		{"backoff_shorter", func(doc map[string]any) { budget(doc, 2)["backoff_s"] = []any{1.0, 600.0} }},
		{"header_added", func(doc map[string]any) {
			health(doc)["responses"].(map[string]any)["200"].(map[string]any)["headers"].(map[string]any)["X-RateLimit-Reset"] = map[string]any{"schema": map[string]any{"type": "integer"}}
		}},
	}
	for _, tc := range loosening {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := apicheck.Check(base, edit(t, base, tc.edit))
			if err != nil || len(fs) != 0 {
				t.Fatalf("findings = %q, %v; loosening must pass", ids(fs), err)
			}
		})
	}
}

// A budget without a burst has burst = limit: adding a lower burst tightens it.
func TestCheckImpliedBurst(t *testing.T) {
	base := edit(t, brainSpec(t), func(doc map[string]any) {
		health(doc)["x-rate-limit"] = []any{map[string]any{"plane": "apikey", "policy": "q", "limit": 100.0, "window_s": 3600.0}}
	})
	rev := edit(t, base, func(doc map[string]any) { budget(doc, 0)["burst"] = 10.0 })
	fs, err := apicheck.Check(base, rev)
	if err != nil || !strings.Contains(ids(fs), apicheck.IDRateLimitTightened) {
		t.Fatalf("findings = %q, %v; want the burst of 10 (was 100 by default) to tighten", ids(fs), err)
	}
	if fs, _ := apicheck.Check(base, edit(t, base, func(doc map[string]any) { budget(doc, 0)["burst"] = 100.0 })); len(fs) != 0 {
		t.Fatalf("making the default burst explicit: %q, want nothing", ids(fs))
	}
}

func TestIgnoreList(t *testing.T) {
	base := edit(t, brainSpec(t), limited)
	rev := edit(t, base, func(doc map[string]any) {
		budget(doc, 0)["limit"] = 60.0
		delete(at(doc, "paths"), "/api/v1/ready")
	})
	fs, err := apicheck.Check(base, rev)
	if err != nil || len(fs) < 2 {
		t.Fatalf("findings = %q, %v; want the two planted breaks", ids(fs), err)
	}
	list, err := apicheck.ParseIgnore(strings.NewReader(`
# deliberate breaks
rate-limit-tightened get /api/v1/health   # abuse seen in production; clients told on 2026-11-01
api-path-removed-without-deprecation POST /api/v1/gone # long gone
`), "test.ignore")
	if err != nil {
		t.Fatal(err)
	}
	breaking, accepted, unused := list.Filter(fs)
	if ids(accepted) != "rate-limit-tightened GET /api/v1/health" {
		t.Errorf("accepted = %q, want the tightened health budget only", ids(accepted))
	}
	if !strings.Contains(ids(breaking), "api-path-removed-without-deprecation GET /api/v1/ready") {
		t.Errorf("breaking = %q, want the unaccepted removal kept", ids(breaking))
	}
	if len(unused) != 1 || !strings.Contains(unused[0], "line 4") {
		t.Errorf("unused = %q, want line 4 reported as matching nothing", unused)
	}
	var none *apicheck.IgnoreList
	if b, _, _ := none.Filter(fs); len(b) != len(fs) {
		t.Error("a nil list must accept nothing")
	}
}

// A change of a component, tied to no operation (the session cookie's
// name, as a rename changes it), is accepted by a line that names the
// component, and by no line that names another, nor by an operation's.
func TestIgnoreComponentChange(t *testing.T) {
	base := brainSpec(t)
	rename := func(scheme, name string) func(doc map[string]any) {
		return func(doc map[string]any) { at(doc, "components", "securitySchemes", scheme)["name"] = name }
	}
	fs, err := apicheck.Check(base, edit(t, base, rename("session", "sid")))
	if err != nil || len(fs) != 1 || fs[0].Component != "securitySchemes/session" || fs[0].Method+fs[0].Path != "" {
		t.Fatalf("findings = %+v, %v; want one of the component securitySchemes/session", fs, err)
	}
	line := apicheck.IgnoreLine(fs[0], "renamed from brain to notes")
	if line != "api-security-component-api-key-name-changed securitySchemes/session  # renamed from brain to notes" {
		t.Fatalf("IgnoreLine = %q", line)
	}
	list, err := apicheck.ParseIgnore(strings.NewReader(line+"\napi-security-component-api-key-name-changed GET /api/v1/me # an operation's\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if breaking, accepted, unused := list.Filter(fs); len(breaking) != 0 || len(accepted) != 1 || len(unused) != 1 || !strings.Contains(unused[0], "line 2") {
		t.Fatalf("Filter = %v, %v, %q; want the change accepted by line 1 only", breaking, accepted, unused)
	}
	// The same change of another scheme is not accepted by that line.
	other, err := apicheck.Check(base, edit(t, base, rename("apiKey", "X-Key")))
	if err != nil || len(other) != 1 {
		t.Fatalf("findings = %+v, %v; want one", other, err)
	}
	if breaking, _, _ := list.Filter(other); len(breaking) != 1 {
		t.Fatalf("the apiKey scheme's change (%v) is accepted by a line for the session scheme's", other[0])
	}
	// An operation's finding round-trips through its line too.
	ops, _ := apicheck.Check(base, edit(t, base, func(doc map[string]any) { delete(at(doc, "paths"), "/api/v1/ready") }))
	opList, err := apicheck.ParseIgnore(strings.NewReader(apicheck.IgnoreLine(ops[0], "gone")), "x")
	if err != nil {
		t.Fatal(err)
	}
	if breaking, _, _ := opList.Filter(ops[:1]); len(breaking) != 0 {
		t.Fatalf("IgnoreLine(%v) does not accept it", ops[0])
	}
}

func TestParseIgnoreNeedsReasons(t *testing.T) {
	for _, line := range []string{
		"rate-limit-tightened GET /api/v1/health",
		"rate-limit-tightened GET /api/v1/health #   ",
		"rate-limit-tightened securitySchemes/session",
		"rate-limit-tightened # one field",
		"rate-limit-tightened GET /api/v1/health extra # four fields",
	} {
		if _, err := apicheck.ParseIgnore(strings.NewReader(line), "x"); err == nil {
			t.Errorf("ParseIgnore(%q) accepted a line it must refuse", line)
		}
	}
}
