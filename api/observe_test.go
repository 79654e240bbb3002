// What the platform reports of its traffic: refusals counted and logged,
// /metrics, the access log.

package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ratelimit"
)

// Every refusal is counted by plane and policy and logged, at most once
// a minute per plane, policy and client, with how many it left out: a
// flood of refusals writes one line (WARN with the address for the ip
// plane, INFO with the user for a caller's), and the next minute one
// more, counting the rest. /metrics, scraped over HTTP after the traffic,
// has the requests by route (its pattern, never the path with its
// parameters) and status, the refusals and the open streams; the access
// log names the client's address and its user.
func TestRefusalsAndMetrics(t *testing.T) {
	clk := apitest.NewClock(t0)
	m := api.NewMetrics()
	tight := ratelimit.Rate{Limit: 2, Window: time.Minute, Burst: 2}
	// A feature's operation with a path parameter, for the route label.
	thing := func(s *api.Server) {
		huma.Register(api.WithAccess(s.API, api.Caller), huma.Operation{OperationID: "test-get-thing", Method: http.MethodGet, Path: "/api/v1/test/things/{id}"},
			func(ctx context.Context, in *struct {
				ID string `path:"id"`
			}) (*struct{}, error) {
				return nil, nil
			})
	}
	l := apitest.Start(t, api.Config{Features: []api.Feature{thing}, Now: clk.Now, Metrics: m, Limits: api.Limits{IP: tight, Session: tight}})

	ada := l.Login(apitest.User, apitest.Password).Cookie(t) // one of the address's 2
	key := l.Key()
	l.Call("GET", "/api/v1/auth/me", nil, key).Want(t, 200, "a key this replica has seen: its own budget, whatever the address's")

	// The ip plane: 30 requests without credentials, 1 admitted (401).
	for range 30 {
		l.Call("GET", "/api/v1/apikeys", nil)
	}
	ipLines := func() []string {
		return grep(l.Logs.String(), `level=WARN msg="rate limited" .*plane=ip policy=ip ip=127.0.0.1 `)
	}
	if got := ipLines(); len(got) != 1 || !strings.Contains(got[0], "suppressed=0") {
		t.Fatalf("29 refusals of one address logged %d lines: %q; want one", len(got), got)
	}

	// A session: its budget of 2, then 10 refusals.
	for range 12 {
		l.Call("GET", "/api/v1/auth/me", nil, ada)
	}
	userLines := func() []string {
		return grep(l.Logs.String(), `level=INFO msg="rate limited" .*plane=session policy=session user=\S+ `)
	}
	if got := userLines(); len(got) != 1 {
		t.Fatalf("10 refusals of a session logged %d lines: %q; want one", len(got), got)
	}

	// A minute on: the next refusal is logged, with the ones left out.
	clk.Advance(time.Minute)
	l.Call("GET", "/api/v1/apikeys", nil)
	if got := ipLines(); len(got) != 2 || !strings.Contains(got[1], "suppressed=28") {
		t.Fatalf("a minute on: %q; want a second line counting the 28 left out", got)
	}

	// The access log names the address and the user.
	if !regexp.MustCompile(`msg=request .*method=GET route=/api/v1/auth/me status=200 .* ip=127.0.0.1 user=[0-9a-f]+`).MatchString(l.Logs.String()) {
		t.Fatal("no access-log line with the address and the user")
	}

	// A stream open, for the gauge; a path with a parameter, for the route.
	if st, r := l.OpenStream("/api/v1/events", key); st == nil {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	l.Call("GET", "/api/v1/test/things/t-8f3a9c", nil, key).Want(t, 204, "the feature's operation")

	metrics := apitest.Scrape(t, m)
	for _, want := range []string{
		`brain_ratelimit_refusals_total{plane="ip",policy="ip"} 30`,
		`brain_ratelimit_refusals_total{plane="session",policy="session"} 10`,
		`brain_http_request_duration_seconds_count{route="/api/v1/auth/me",status="429"} 10`,
		`brain_http_request_duration_seconds_count{route="/api/v1/auth/me",status="200"} 3`,
		`brain_http_request_duration_seconds_count{route="/api/v1/apikeys",status="401"} 1`,
		`brain_http_request_duration_seconds_count{route="/api/v1/test/things/{id}",status="204"} 1`,
		`brain_streams_open 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "t-8f3a9c") {
		t.Error("/metrics names a raw path")
	}
}

// grep returns the lines of text that match pattern.
func grep(text, pattern string) []string {
	re := regexp.MustCompile(pattern)
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// A login the back-off refuses is counted with the other refusals, under
// plane and policy login, whether the planes run or are all off: the
// back-off is the handler's, not a plane's.
func TestLoginBackoffRefusalsAreCounted(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		m := api.NewMetrics()
		l := apitest.Start(t, api.Config{Metrics: m, Limits: api.Limits{Disabled: disabled}})
		for range 5 {
			l.Login(apitest.User, "not the password at all").Want(t, 401, "a wrong password")
		}
		r := l.Login(apitest.User, "not the password at all")
		if r.Status != 429 || r.Refusal(t).Details.Scope != "login" {
			t.Fatalf("disabled %v: the sixth failure: %d %s, want the back-off's 429", disabled, r.Status, r.Body)
		}
		if got := apitest.Scrape(t, m); !strings.Contains(got, `brain_ratelimit_refusals_total{plane="login",policy="login"} 1`) {
			t.Errorf("disabled %v: the back-off's refusal is not counted:\n%s", disabled, got)
		}
	}
}
