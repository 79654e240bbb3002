package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit/redistest"
)

// Two replicas sharing one Redis enforce one per-IP budget over HTTP, and
// each reports its decisions on /metrics.
func TestReplicasShareRedisBudget(t *testing.T) {
	env := map[string]string{
		"BRAIN_REDIS_URL":     redistest.URL(t),
		"BRAIN_REDIS_PREFIX":  redistest.Prefix(t),
		"BRAIN_RATE_LIMIT_IP": "4/min,burst=4",
		"BRAIN_REDIS_TIMEOUT": "2s", // a loaded machine's Redis round trip is no store error
	}
	copyEnv := func() map[string]string {
		m := map[string]string{}
		for k, v := range env {
			m[k] = v
		}
		return m
	}
	a, logsA := MustRunServer(t, copyEnv())
	bURL, _ := MustRunServer(t, copyEnv())
	admitted := 0
	for i := range 10 {
		base := a
		if i%2 == 1 {
			base = bURL
		}
		r := login(client{t, base}, "nobody", "not the password")
		if r.status != 429 {
			admitted++
		} else if r.str("details", "scope") != "ip" {
			t.Fatalf("refused by %q, want the ip plane: %s", r.str("details", "scope"), r.raw)
		}
	}
	if admitted != 4 {
		t.Fatalf("two replicas admitted %d logins from one IP, want the one shared budget of 4", admitted)
	}
	ready := client{t, a}.do("GET", "/api/v1/ready", nil)
	if ready.status != 200 || !strings.Contains(ready.raw, "redis") {
		t.Fatalf("ready = %d %s, want redis among the checks", ready.status, ready.raw)
	}

	m := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(logsA.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", logsA)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		text := string(body)
		if strings.Contains(text, `brain_ratelimit_decisions_total{outcome="allowed",plane="ip",policy="ip"}`) &&
			strings.Contains(text, "brain_ratelimit_store_errors_total 0") && strings.Contains(text, `brain_ratelimit_store_requests_total{policy="ip"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks the rate-limit series:\n%s", text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The served spec shows the running budgets; `brain openapi`, the defaults.
func TestServedSpecShowsRunningBudgets(t *testing.T) {
	base, _ := MustRunServer(t, map[string]string{"BRAIN_RATE_LIMIT_SESSION": "7/min,burst=3",
		"BRAIN_STREAM_CAP": "3", "BRAIN_STREAM_USER_CAP": "5", "BRAIN_STREAM_OPENS": "9/h,burst=4", "BRAIN_STREAM_USER_OPENS": "20/h,burst=8"})
	res, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	committed, _ := os.ReadFile("../../openapi.json")
	var doc struct {
		Paths map[string]map[string]struct {
			X []api.RateLimitEntry `json:"x-rate-limit"`
		}
	}
	entries := func(spec []byte, path, plane string) []api.RateLimitEntry {
		if err := json.Unmarshal(spec, &doc); err != nil {
			t.Fatal(err)
		}
		var out []api.RateLimitEntry
		for _, e := range doc.Paths[path]["get"].X {
			if e.Plane == plane {
				out = append(out, e)
			}
		}
		return out
	}
	session := func(spec []byte) (limit, burst int) {
		for _, e := range entries(spec, "/api/v1/auth/me", "session") {
			return e.Limit, e.Burst
		}
		return 0, 0
	}
	if l, b := session(served); l != 7 || b != 3 {
		t.Fatalf("served spec: session budget %d burst %d, want the running 7 and 3", l, b)
	}
	if l, b := session(committed); l != 120 || b != 60 {
		t.Fatalf("committed spec: session budget %d burst %d, want the defaults 120 and 60", l, b)
	}
	for _, tc := range []struct {
		spec []byte
		want string
	}{
		{served, "[{stream streams 0 0 0 3 0 0 [] } {stream streams-per-user 0 0 0 5 0 0 [] } {stream stream-opens 9 3600 4 0 0 0 [] } {stream stream-opens-per-user 20 3600 8 0 0 0 [] }]"},
		{committed, "[{stream streams 0 0 0 16 0 0 [] } {stream streams-per-user 0 0 0 64 0 0 [] } {stream stream-opens 60 60 20 0 0 0 [] } {stream stream-opens-per-user 240 60 80 0 0 0 [] }]"},
	} {
		if got := fmt.Sprint(entries(tc.spec, "/api/v1/events", "stream")); got != tc.want {
			t.Errorf("the stream plane of GET /api/v1/events: %s, want %s", got, tc.want)
		}
	}
}

// Replicas on one Redis must spread stream events over the same number
// of shards: one with another number refuses to start, and says how to
// change it.
func TestReplicasAgreeOnEventShards(t *testing.T) {
	kv := map[string]string{"BRAIN_REDIS_URL": redistest.URL(t), "BRAIN_REDIS_PREFIX": redistest.Prefix(t), "BRAIN_REDIS_EVENT_SHARDS": "4"}
	MustRunServer(t, maps.Clone(kv))
	MustRunServer(t, maps.Clone(kv))
	kv["BRAIN_REDIS_EVENT_SHARDS"] = "2"
	kv = serveEnv(t, kv)
	err := run(context.Background(), nil, env(kv), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "spread events over 4 shards") || !strings.Contains(err.Error(), "this one over 2") {
		t.Fatalf("a replica with 2 shards beside two with 4: %v; want it refused, naming both", err)
	}
	// It refused before opening the database: no admin was made whose
	// random password only that failed start would have shown.
	if entries, _ := os.ReadDir(kv["BRAIN_DATA_DIR"]); len(entries) != 0 {
		t.Fatalf("the refused start left %d file(s) in the data dir, want none", len(entries))
	}
}

// BRAIN_REDIS_TIMEOUT reaches the rate limits: with Redis 300 ms away (a
// proxy delays it), a timeout of 5 s decides every request in Redis, where
// the default 100 ms would count each as a store error.
func TestRedisTimeoutFromSettings(t *testing.T) {
	u, err := url.Parse(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	base, logs := MustRunServer(t, map[string]string{"BRAIN_REDIS_URL": u.String(), "BRAIN_REDIS_PREFIX": redistest.Prefix(t),
		"BRAIN_REDIS_TIMEOUT": "5s"})
	proxy.Delay(300 * time.Millisecond)
	login(client{t, base}, "nobody", "not the password")
	if m := metricsOf(t, logs); m["brain_ratelimit_store_errors_total"] != 0 || m[`brain_ratelimit_store_requests_total{policy="ip"}`] == 0 {
		t.Fatalf("with Redis 300 ms away and a timeout of 5 s: %v store errors in %v calls; want none",
			m["brain_ratelimit_store_errors_total"], m[`brain_ratelimit_store_requests_total{policy="ip"}`])
	}
}
