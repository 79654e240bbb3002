package ingest_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
)

// Every refusal is counted by plane and policy and logged, at most once
// a minute per plane, policy and client, with how many it left out: a
// flood of refusals writes one line (WARN with the address for the ip
// plane, INFO with the user for a caller's), and the next minute one
// more, counting the rest. /metrics, scraped over HTTP after the traffic,
// has the requests by route and status, the refusals, the open streams,
// the jobs by status and the idempotent replays; the access log names
// the client's address and its user.
func TestRefusalsAndMetrics(t *testing.T) {
	clk := apitest.NewClock(t0)
	m := api.NewMetrics()
	tight := ratelimit.Rate{Limit: 2, Window: time.Minute, Burst: 2}
	logs := &apitest.Logs{}
	db, hub := apitest.OpenDB(t), streams.NewMemoryHub(1024, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub)}) // no worker: jobs stay queued
	l := apitest.Start(t, api.Config{DB: db, Features: []api.Feature{ingest.Feature(memory)},
		Now: clk.Now, Metrics: m, Logger: slog.New(slog.NewTextHandler(logs, nil)), Limits: api.Limits{IP: tight, Session: tight}}, apitest.Streams(streams.Config{Hub: hub}))
	svc := l.Auth
	scrape := httptest.NewServer(m.Handler())
	t.Cleanup(scrape.Close)

	ada := l.Login("ada", "correct horse battery").Cookie(t) // one of the address's 2
	key := "X-API-Key: " + apitest.APIKey(t, svc)
	l.Call("GET", "/api/v1/auth/me", nil, key).Want(t, 200, "a key this replica has seen: its own budget, whatever the address's")

	// The ip plane: 30 requests without credentials, 1 admitted (401).
	for range 30 {
		l.Call("GET", "/api/v1/apikeys", nil)
	}
	ipLines := func() []string {
		return grep(logs.String(), `level=WARN msg="rate limited" .*plane=ip policy=ip ip=127.0.0.1 `)
	}
	if got := ipLines(); len(got) != 1 || !strings.Contains(got[0], "suppressed=0") {
		t.Fatalf("29 refusals of one address logged %d lines: %q; want one", len(got), got)
	}

	// A session: its budget of 2, then 10 refusals.
	for range 12 {
		l.Call("GET", "/api/v1/auth/me", nil, ada)
	}
	userLines := func() []string {
		return grep(logs.String(), `level=INFO msg="rate limited" .*plane=session policy=session user=\S+ `)
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
	if !regexp.MustCompile(`msg=request .*method=GET route=/api/v1/auth/me status=200 .* ip=127.0.0.1 user=[0-9a-f]+`).MatchString(logs.String()) {
		t.Fatal("no access-log line with the address and the user")
	}

	// A stream open, a job queued and replayed, for the gauges.
	if st, r := l.OpenStream("/api/v1/events", key); st == nil {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	batch := map[string]any{"project": "p", "items": []map[string]string{{"text": "one"}}}
	l.Call("POST", "/api/v1/memory/ingest", batch, key).Want(t, 202, "ingest")
	l.Call("POST", "/api/v1/memory/ingest", batch, key).Want(t, 202, "replay")

	res, err := http.Get(scrape.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`brain_ratelimit_refusals_total{plane="ip",policy="ip"} 30`,
		`brain_ratelimit_refusals_total{plane="session",policy="session"} 10`,
		`brain_http_request_duration_seconds_count{route="/api/v1/auth/me",status="429"} 10`,
		`brain_http_request_duration_seconds_count{route="/api/v1/auth/me",status="200"} 3`,
		`brain_http_request_duration_seconds_count{route="/api/v1/apikeys",status="401"} 1`,
		`brain_streams_open 1`,
		`brain_jobs{status="queued"} 1`,
		`brain_jobs{status="running"} 0`,
		`brain_jobs{status="failed"} 0`,
		`brain_ingest_replays_total 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), "/api/v1/jobs/") {
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
