package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/product"
)

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	StartTime     int64  `json:"startTime"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(key string) any {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return nil
}

// parent is the span s refers to (CHILD_OF or FOLLOWS_FROM), or "".
func (s jaegerSpan) parent() string {
	if len(s.References) == 0 {
		return ""
	}
	return s.References[0].SpanID
}

// freeAddr is a loopback address no one listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startJaeger starts Jaeger's all-in-one (the binary BRAIN_TEST_JAEGER
// names; make jaeger builds it) on free loopback ports,
// its traces in memory, and returns its OTLP/HTTP endpoint and the base of
// its query API. It skips the test when there is none (fails under CI=true).
func startJaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	bin := os.Getenv(product.EnvPrefix + "TEST_JAEGER")
	if _, err := os.Stat(bin); bin == "" || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the tracing test needs Jaeger all-in-one v1.75.0, named by %sTEST_JAEGER (.ci/run builds it with make jaeger): %q", product.EnvPrefix, bin)
		}
		t.Skipf("no Jaeger: %sTEST_JAEGER names none (make jaeger builds one, and says where; .ci/run sets it)", product.EnvPrefix)
	}
	otlpAddr, queryAddr, grpcAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry: {metrics: {level: none}, logs: {level: warn}}
extensions:
  jaeger_storage: {backends: {mem: {memory: {max_traces: 10000}}}}
  jaeger_query: {storage: {traces: mem}, http: {endpoint: "%s"}, grpc: {endpoint: "%s"}}
receivers:
  otlp: {protocols: {http: {endpoint: "%s"}}}
processors:
  batch: {}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`, queryAddr, grpcAddr, otlpAddr), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	query = "http://" + queryAddr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(query + "/api/services"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return "http://" + otlpAddr, query
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger did not answer on %s within 60s:\n%s", query, logs)
		}
	}
}

// jaegerTrace is one trace as Jaeger's query API returns it, its spans in
// the order they started.
type jaegerTrace struct {
	t     *testing.T
	id    string
	spans []jaegerSpan
}

// tracedEnv is the environment of a brain that sends its spans to otlp at
// once and trusts the tests' traceparent (they connect from loopback).
func tracedEnv(otlp string, kv map[string]string) map[string]string {
	kv["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp
	kv["OTEL_BSP_SCHEDULE_DELAY"] = "100" // ms: spans leave at once
	kv["BRAIN_TRUSTED_PROXIES"] = "127.0.0.1/32"
	return kv
}

// The trace the tests' requests continue, and their span in it.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	traceparent = "traceparent: 00-" + callerTrace + "-" + callerSpan + "-01"
)

// fetchTrace asks Jaeger at query for trace id until done holds of it, for
// up to a minute, and logs it.
func fetchTrace(t *testing.T, query, id string, done func(jaegerTrace) bool) jaegerTrace {
	t.Helper()
	tr := jaegerTrace{t: t, id: id}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var got struct {
			Data []struct {
				Spans []jaegerSpan `json:"spans"`
			} `json:"data"`
		}
		if resp, err := http.Get(query + "/api/traces/" + id); err == nil {
			json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		if len(got.Data) == 1 {
			tr.spans = got.Data[0].Spans
			slices.SortFunc(tr.spans, func(a, b jaegerSpan) int { return cmp.Compare(a.StartTime, b.StartTime) })
		}
		if done(tr) {
			t.Logf("trace %s as Jaeger returns it (span, then the one it refers to):%s", id, tr)
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has not the whole of trace %s within a minute; it has:%s", id, tr)
		}
	}
}

// String is the trace's spans, each with the one it refers to.
func (tr jaegerTrace) String() string {
	var b strings.Builder
	for _, sp := range tr.spans {
		ref := "-"
		if len(sp.References) > 0 {
			ref = sp.References[0].RefType + " the caller's " + sp.parent()
			for _, p := range tr.spans {
				if p.SpanID == sp.parent() {
					ref = sp.References[0].RefType + " " + p.OperationName
				}
			}
		}
		fmt.Fprintf(&b, "\n  %-28s %s", sp.OperationName, ref)
	}
	return b.String()
}

// named is the trace's spans of that name.
func (tr jaegerTrace) named(name string) (found []jaegerSpan) {
	for _, sp := range tr.spans {
		if sp.OperationName == name {
			found = append(found, sp)
		}
	}
	return found
}

// childOf is a span named name that refers to parent; the test fails if
// there is none.
func (tr jaegerTrace) childOf(name string, parent jaegerSpan) jaegerSpan {
	tr.t.Helper()
	for _, sp := range tr.named(name) {
		if sp.parent() == parent.SpanID {
			return sp
		}
	}
	tr.t.Fatalf("no span %q refers to %q:%s", name, parent.OperationName, tr)
	return jaegerSpan{}
}

// request is the trace's one span named name, the request's: a child of
// the trusted caller's span, with tags.
func (tr jaegerTrace) request(name string, tags map[string]any) jaegerSpan {
	tr.t.Helper()
	req := tr.named(name)
	if len(req) != 1 {
		tr.t.Fatalf("want one span named by the route, %s:%s", name, tr)
	}
	if req[0].parent() != callerSpan || req[0].References[0].RefType != "CHILD_OF" {
		tr.t.Errorf("the request's span refers to %+v; want CHILD_OF the trusted caller's span %s", req[0].References, callerSpan)
	}
	for key, want := range tags {
		if got := req[0].tag(key); got != want {
			tr.t.Errorf("the request's span has %s = %v, want %v", key, got, want)
		}
	}
	return req[0]
}

// accessLineTraced fails the test unless the access line of route in p's
// log carries trace_id=id.
func accessLineTraced(t *testing.T, p *proc, route, id string) {
	t.Helper()
	var line string
	for l := range strings.Lines(p.logs.String()) {
		if strings.Contains(l, "route="+route+" ") {
			line = l
		}
	}
	if !strings.Contains(line, "trace_id="+id) {
		t.Errorf("the access line of %s does not carry trace_id=%s: %q", route, id, line)
	}
}

// A login is one trace in Jaeger, over the wire: the request's span, named
// by its route and continuing the traceparent of a trusted caller, with its
// status and rate-limit decision, and its statements as its children. The
// access line carries the trace's id.
func TestTracesReachJaeger(t *testing.T) {
	otlp, query := startJaeger(t)
	p := startProc(t, tracedEnv(otlp, map[string]string{"BRAIN_ADMIN_PASSWORD": adminPassword, "BRAIN_COOKIE_SECURE": "false"}))
	c := client{t, p.base}
	c.do("POST", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPassword}, traceparent).want(t, 200, "login")
	const route = "/api/v1/auth/login"
	tr := fetchTrace(t, query, callerTrace, func(tr jaegerTrace) bool {
		req := tr.named("POST " + route)
		return len(req) == 1 && slices.ContainsFunc(tr.spans, func(sp jaegerSpan) bool { return sp.parent() == req[0].SpanID && sp.OperationName == "INSERT" })
	})
	req := tr.request("POST "+route, map[string]any{"http.response.status_code": float64(200), "http.route": route,
		"ratelimit.plane": "ip", "ratelimit.admitted": true, "ratelimit.policy": "ip"})
	tr.childOf("SELECT", req) // the user
	tr.childOf("INSERT", req) // the session
	accessLineTraced(t, p, route, callerTrace)
}
