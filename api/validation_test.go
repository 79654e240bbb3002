package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/danielgtaylor/huma/v2"
)

// manyMembers is a JSON object of n members named by name(i).
func manyMembers(n int, name func(int) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:1", name(i))
	}
	b.WriteByte('}')
	return b.String()
}

// TestValidationCostIsLinear sends bodies of about 1 MB whose every member
// is unexpected. The work to refuse one must grow with the body, not with
// its square: formatting each error's value (the whole object around an
// unexpected member) took 6-14 s for the first body, and member names
// holding '.' made huma's own validator copy an ever-growing path for
// each error (13 s and gigabytes for the last).
func TestValidationCostIsLinear(t *testing.T) {
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc})
	huma.Register(s.API, huma.Operation{OperationID: "test-big", Method: http.MethodPost, Path: "/api/v1/test/big", MaxBodyBytes: 1 << 20},
		func(ctx context.Context, in *echoInput) (*echoOutput, error) { return nil, nil })
	srv := httptest.NewServer(withKey(t, s, svc))
	defer srv.Close()
	client := &http.Client{Timeout: 30 * time.Second} // 0.1 s now, 1 s with -race

	plain := manyMembers(75000, func(i int) string { return fmt.Sprintf("k%d", i) })
	dotted := manyMembers(90000, func(i int) string { return fmt.Sprintf(".%d", i) })
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"login", "/api/v1/auth/login", plain, http.StatusRequestEntityTooLarge},
		{"unexpected_members", "/api/v1/test/big", plain, http.StatusUnprocessableEntity},
		{"dotted_names", "/api/v1/test/big", dotted, http.StatusUnprocessableEntity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bytes the process allocates measure the server's work
			// whatever the load on the machine: about 30 MiB (parsing a
			// 1 MB body twice) against gigabytes before.
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			resp, err := client.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err) // before: the client gives up
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d in %v, %d MiB allocated", resp.StatusCode, took, allocated>>20)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if allocated > 256<<20 {
				t.Errorf("refusing a %d-byte body allocated %d MiB", len(tc.body), allocated>>20)
			}
			if strings.Contains(string(body), `k1`) || strings.Contains(string(body), `.1`) {
				t.Errorf("the envelope names a member of the body: %s", body)
			}
		})
	}
}

// marker is planted in every part of a request; no error may repeat it.
const marker = "ECHOMARK"

// markerInput has a parameter of each kind and body members whose
// validation messages could quote the input.
type markerInput struct {
	ID    string     `path:"id" pattern:"^[a-z]+$" maxLength:"10"`
	N     int        `query:"n" minimum:"1" maximum:"10"`
	Kind  string     `query:"kind" enum:"a,b"`
	Since time.Time  `query:"since"`
	Addr  netip.Addr `query:"addr"`
	Thing string     `header:"X-Thing" pattern:"^[a-z]+$" maxLength:"10"`
	Body  struct {
		Text  string         `json:"text" maxLength:"5"`
		Link  string         `json:"link,omitempty" format:"uri" maxLength:"100"`
		Mail  string         `json:"mail,omitempty" format:"email" maxLength:"100"`
		Re    string         `json:"re,omitempty" format:"regex" maxLength:"100"`
		UUID  string         `json:"uuid,omitempty" format:"uuid" maxLength:"100"`
		When  string         `json:"when,omitempty" format:"date-time" maxLength:"100"`
		Kind  string         `json:"kind,omitempty" enum:"x,y"`
		Tags  map[string]int `json:"tags,omitempty"`
		Items []struct {
			Name string `json:"name" maxLength:"3"`
		} `json:"items,omitempty" maxItems:"3"`
	}
}

// TestErrorsNeverEchoRequest plants a marker in every part of requests
// that fail validation: the path, query parameters' names and values, a
// header, the Content-Type, and the body's member names and values. huma's
// messages quote some of these (a format check quotes the parser's error,
// the location of an unexpected member is its name, a 415 quotes the
// Content-Type); the envelope must not.
func TestErrorsNeverEchoRequest(t *testing.T) {
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc})
	huma.Register(s.API, huma.Operation{OperationID: "test-marker", Method: http.MethodPost, Path: "/api/v1/test/marker/{id}"},
		func(ctx context.Context, in *markerInput) (*echoOutput, error) { return nil, nil })
	huma.Register(s.API, huma.Operation{OperationID: "test-strict-query", Method: http.MethodGet, Path: "/api/v1/test/strict", RejectUnknownQueryParameters: true},
		func(ctx context.Context, in *struct {
			N int `query:"n" maximum:"10"`
		}) (*echoOutput, error) {
			return nil, nil
		})
	srv := httptest.NewServer(withKey(t, s, svc))
	defer srv.Close()

	body := `{"text":"<script>` + marker + `","link":"http://[` + marker + `","mail":"` + marker + `","re":"(` + marker + `",` +
		`"uuid":"` + marker + `","when":"` + marker + `","kind":"` + marker + `","<img src=x onerror=alert(1)>` + marker + `":1,` +
		`"` + marker + `.x":1,"x.` + marker + `":1,"tags":{"` + marker + `":"` + marker + `"},` +
		`"items":[{"name":"` + marker + `","` + marker + `[0]":1}]}`
	query := "?n=" + marker + "&kind=" + marker + "&since=" + marker + "&addr=" + marker + "&" + marker + "=" + marker
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
		want                            []string // location: message pairs that must be there
	}{
		{"everywhere", "POST", "/api/v1/test/marker/" + marker + query, "application/json", body, 422, []string{
			"path.id: expected string to match pattern ^[a-z]+$",
			"query.n: invalid integer",
			"query.since: invalid date/time for format " + time.RFC3339Nano,
			"query.addr: invalid value",
			"header.X-Thing: expected string to match pattern ^[a-z]+$",
			"body: unexpected property",
			"body.link: expected string to be RFC 3986 uri",
			"body.mail: expected string to be RFC 5322 email",
			"body.re: expected string to be regex",
			"body.when: expected string to be RFC 3339 date-time",
			"body.tags: expected integer",
			"body.items[0]: unexpected property",
		}},
		{"enum_and_uuid", "POST", "/api/v1/test/marker/abc?kind=" + marker, "application/json", `{"text":"a","kind":"` + marker + `","uuid":"` + marker + `"}`, 422, []string{
			`query.kind: expected value to be one of "a, b"`,
			`body.kind: expected value to be one of "x, y"`,
			"body.uuid: expected string to be RFC 4122 uuid",
		}},
		{"unknown_query_parameter", "GET", "/api/v1/test/strict?" + marker + "=1", "", "", 422, []string{"query: unknown query parameter"}},
		{"content_type", "POST", "/api/v1/test/marker/abc", "text/" + marker + "<script>", `{"text":"a"}`, 415, nil},
		{"malformed", "POST", "/api/v1/test/marker/abc", "application/json", `{"text":"` + marker, 400, []string{"body: the request body is not valid JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.Header.Set("X-Thing", "<b>"+marker)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, raw)
			}
			if strings.Contains(strings.ToUpper(string(raw)), marker) || strings.Contains(string(raw), "<script") || strings.Contains(string(raw), "<img") || strings.Contains(string(raw), "<b>") {
				t.Errorf("the envelope repeats the request: %s", raw)
			}
			var env apitest.Envelope
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, e := range env.Details.Errors {
				got[e.Location+": "+e.Message] = true
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("details.errors lacks %q: %s", w, raw)
				}
			}
		})
	}
}

// TestSpecPropertyNames checks that no schema declares a property whose
// name holds '%', '.' or '[': a location could not name it, and the
// validator's copy of a body escapes those characters in names.
func TestSpecPropertyNames(t *testing.T) {
	s := api.New(api.Config{Features: documented()})
	for name, sch := range s.API.OpenAPI().Components.Schemas.Map() {
		for p := range sch.Properties {
			if strings.ContainsAny(p, "%.[") {
				t.Errorf("schema %s declares the property %q", name, p)
			}
		}
	}
}

// A query parameter typed integer, number or boolean sent empty
// ("?limit=") is a 422 at query.<name>, with the rate-limit headers of
// any 422, on every GET that has one; huma took it for a parameter left
// out and answered with its default. An empty string parameter is a
// value, and stays one.
func TestEmptyNumberParameterIs422(t *testing.T) {
	_, l, _ := streamServer(t, api.Config{})
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	n := 0
	mustServedSpec(t, l).operations(func(method, path string, op map[string]any) {
		params, _ := op["parameters"].([]any)
		for _, p := range params {
			p := p.(map[string]any)
			schema, _ := p["schema"].(map[string]any)
			if method != "GET" || p["in"] != "query" || schema["type"] == "string" {
				continue
			}
			n++
			name := p["name"].(string)
			r := l.Call(method, concretePath(path)+"?"+name+"=", nil, ada)
			var env apitest.Envelope
			_ = json.Unmarshal([]byte(r.Body), &env)
			if r.Status != http.StatusUnprocessableEntity || len(env.Details.Errors) != 1 || env.Details.Errors[0].Location != "query."+name || r.Header.Get("RateLimit") == "" {
				t.Errorf("%s %s?%s=: %d RateLimit=%q %s; want 422 at query.%s with the rate-limit headers", method, path, name, r.Status, r.Header.Get("RateLimit"), r.Body, name)
			}
		}
	})
	if n == 0 {
		t.Fatal("no GET has a query parameter that is no string")
	}
	if r := l.Call("GET", "/api/v1/apikeys?cursor=", nil, ada); r.Status != http.StatusOK {
		t.Errorf("GET /api/v1/apikeys?cursor=: %d %s; an empty string is a value", r.Status, r.Body)
	}
}
