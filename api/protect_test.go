package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/danielgtaylor/huma/v2"
)

// protectedServer is the whole server with small budgets and two routes
// added straight to the router behind api.Protect: a download that needs
// a caller and draws, for API keys, from its own budget (2/h); and a
// public webhook counted by its sender on the ip plane (2/min). It returns
// the server, served over real HTTP, and ada's session cookie and API key
// as headers.
func protectedServer(t *testing.T) (*api.Server, *apitest.Client, string, string) {
	t.Helper()
	clk := testclock.New(t0)
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: small(clk), Now: clk.Now})
	ok := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the file") }
	download := api.WithBudget(huma.Operation{OperationID: "download-export", Method: http.MethodGet, Path: "/api/v1/exports/{id}",
		Responses: map[string]*huma.Response{"200": {Description: "The export."}}}, api.Budget{Name: "exports", Default: "2/h"})
	s.Router().With(api.Protect(api.WithAccess(s.API, api.Caller), download, nil)).Get("/api/v1/exports/{id}", ok)
	hook := huma.Operation{OperationID: "receive-webhook", Method: http.MethodPost, Path: "/api/v1/webhooks/payments",
		Responses: map[string]*huma.Response{"200": {Description: "Received."}}}
	// The sender, as a proxy in front of brain that checked its client
	// certificate names it (a header a client sets itself would let it
	// pick a fresh budget each time: see Protect).
	sender := func(r *http.Request) string { return r.Header.Get("X-Sender") }
	s.Router().With(api.Protect(api.WithAccess(s.API, api.Public), hook, sender)).Post("/api/v1/webhooks/payments", ok)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	cookie, key := loginAndKey(t, svc)
	return s, apitest.Serve(t, s), "Cookie: " + cookie, "X-API-Key: " + key
}

// A route added straight to chi behind api.Protect is guarded as an
// operation with the same declaration: no caller gets the 401 envelope,
// an API key draws from the route's budget and a session from its
// session's, every answer carries the rate-limit headers, and a refusal
// is the one 429 envelope with its Retry-After. The handler sees the
// caller.
func TestProtectedRoute(t *testing.T) {
	_, l, cookie, key := protectedServer(t)
	if r := l.Call("GET", "/api/v1/exports/1", nil); r.Status != 401 || r.Code() != "unauthenticated" {
		t.Fatalf("no caller: %d %s, want the 401 envelope", r.Status, r.Body)
	}
	for i := range 2 {
		r := l.Call("GET", "/api/v1/exports/1", nil, key).Want(t, 200, fmt.Sprintf("key's download %d", i+1))
		if r.Body != "the file" || r.Header.Get("RateLimit-Policy") != `"exports";q=2;w=3600` || r.Header.Get("RateLimit") == "" {
			t.Fatalf("key's download %d: %q %v", i+1, r.Body, r.Header)
		}
	}
	r := l.Call("GET", "/api/v1/exports/1", nil, key)
	if env := r.Refusal(t); r.Status != 429 || env.Details.Scope != "apikey" || env.Details.Policy != "exports" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("key's third download: %d %v %s, want 429 of the exports budget", r.Status, r.Header, r.Body)
	}
	for i := range 3 { // small's session budget: 3 a minute
		if r := l.Call("GET", "/api/v1/exports/1", nil, cookie).Want(t, 200, fmt.Sprintf("session's download %d", i+1)); r.Header.Get("RateLimit-Policy") != `"session";q=3;w=60` {
			t.Fatalf("session's download: %v", r.Header)
		}
	}
	if r := l.Call("GET", "/api/v1/exports/1", nil, cookie); r.Status != 429 || r.Refusal(t).Details.Scope != "session" {
		t.Fatalf("session's fourth download: %d %s", r.Status, r.Body)
	}
}

// Protect's key function counts a public webhook by its sender on the
// ip plane: one sender spending the budget leaves another's whole,
// though both come from one address; without the header, the client IP
// is the key.
func TestProtectedRouteKeyFunction(t *testing.T) {
	_, l, _, _ := protectedServer(t)
	post := func(sender string) apitest.Reply {
		if sender == "" {
			return l.Call("POST", "/api/v1/webhooks/payments", nil)
		}
		return l.Call("POST", "/api/v1/webhooks/payments", nil, "X-Sender: "+sender)
	}
	for i := range 2 {
		post("bank-a").Want(t, 200, fmt.Sprintf("bank-a's webhook %d", i+1))
	}
	if r := post("bank-a"); r.Status != 429 || r.Refusal(t).Details.Scope != "ip" {
		t.Fatalf("bank-a's third webhook: %d %s, want 429 of the ip plane", r.Status, r.Body)
	}
	post("bank-b").Want(t, 200, "bank-b's webhook")
	// A sender named like the client's address has a bucket of its own.
	post("127.0.0.1").Want(t, 200, "a sender named 127.0.0.1")
	post("127.0.0.1").Want(t, 200, "a sender named 127.0.0.1, again")
	post("").Want(t, 200, "a webhook without a sender")
	post("").Want(t, 200, "a second without a sender")
	if r := post(""); r.Status != 429 {
		t.Fatalf("a third without a sender: %d, want 429 for the client IP", r.Status)
	}
}

// The spec declares the protected routes as it does the operations: the
// download's security, 401 and 429 responses and its x-rate-limit (its
// budget for API keys, the session plane, the ip plane for failed
// credentials); the webhook as a public operation on the ip plane.
func TestProtectedRouteInSpec(t *testing.T) {
	s, _, _, _ := protectedServer(t)
	paths := s.API.OpenAPI().Paths
	get := paths["/api/v1/exports/{id}"].Get
	if get == nil || len(get.Security) != 3 || get.Responses["401"] == nil || get.Responses["429"] == nil {
		t.Fatalf("download: %+v", get)
	}
	policies := func(op *huma.Operation) (out []string) {
		entries, _ := op.Extensions["x-rate-limit"].([]api.RateLimitEntry)
		for _, e := range entries {
			out = append(out, e.Plane+"/"+e.Policy)
		}
		return out
	}
	if got := policies(get); !slices.Equal(got, []string{"session/session", "apikey/exports", "ip/ip"}) {
		t.Fatalf("download's x-rate-limit: %v", got)
	}
	post := paths["/api/v1/webhooks/payments"].Post
	if post == nil || len(post.Security) != 0 || post.Responses["429"] == nil || !slices.Equal(policies(post), []string{"ip/ip"}) {
		t.Fatalf("webhook: %+v %v", post, policies(post))
	}
	if _, err := s.Spec(); err != nil {
		t.Fatal(err)
	}
}
