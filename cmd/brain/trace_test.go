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

// An ingest is one trace in Jaeger, over the wire: the request's span,
// named by its route and continuing the traceparent of a trusted caller,
// with its status and rate-limit decision; its statements; the enqueue;
// then, from the job's metadata, the job's wait in the queue and its work,
// with the work's statements. The access line of the request carries the
// trace's id.
func TestTracesReachJaeger(t *testing.T) {
	otlp, query := startJaeger(t)
	p := startProc(t, memoryEnv(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": otlp,
		"OTEL_BSP_SCHEDULE_DELAY":     "100", // ms: spans leave at once
		"BRAIN_TRUSTED_PROXIES":       "127.0.0.1/32",
	}))
	s := loginAdmin(t, p.base)
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := s.client.do("POST", "/api/v1/memory/ingest", map[string]any{"project": "garden", "items": []map[string]string{{"text": "Repot the basil"}}},
		s.cookie, "traceparent: 00-"+traceID+"-"+callerSpan+"-01").want(t, 202, "ingest")
	s.waitJob(r.str("job_id"), time.Minute)

	var spans []jaegerSpan
	byID := map[string]jaegerSpan{}
	named := func(name string) (found []jaegerSpan) {
		for _, sp := range spans {
			if sp.OperationName == name {
				found = append(found, sp)
			}
		}
		return found
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var got struct {
			Data []struct {
				Spans []jaegerSpan `json:"spans"`
			} `json:"data"`
		}
		if resp, err := http.Get(query + "/api/traces/" + traceID); err == nil {
			json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		if len(got.Data) == 1 {
			spans = got.Data[0].Spans
		}
		// done once the job's last statement (it marks the job succeeded) is in
		if jobs := named("job ingest"); len(jobs) == 1 && slices.ContainsFunc(spans, func(sp jaegerSpan) bool {
			return sp.parent() == jobs[0].SpanID && sp.OperationName == "UPDATE"
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no trace %s with the job's work within a minute; it has %d spans: %+v", traceID, len(spans), spans)
		}
	}
	slices.SortFunc(spans, func(a, b jaegerSpan) int { return cmp.Compare(a.StartTime, b.StartTime) })
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	var tree strings.Builder
	for _, sp := range spans {
		ref := "-"
		if len(sp.References) > 0 {
			ref = sp.References[0].RefType + " " + cmp.Or(byID[sp.parent()].OperationName, "the caller's "+sp.parent())
		}
		fmt.Fprintf(&tree, "\n  %-28s %s", sp.OperationName, ref)
	}
	t.Logf("the ingest's trace %s as Jaeger returns it (span, then the one it refers to):%s", traceID, tree.String())

	req := named("POST /api/v1/memory/ingest")
	if len(req) != 1 {
		t.Fatalf("want one span named by the route, POST /api/v1/memory/ingest:%s", tree.String())
	}
	root := req[0]
	if root.parent() != callerSpan || root.References[0].RefType != "CHILD_OF" {
		t.Errorf("the request's span refers to %+v; want CHILD_OF the trusted caller's span %s", root.References, callerSpan)
	}
	for key, want := range map[string]any{"http.response.status_code": float64(202), "http.route": "/api/v1/memory/ingest",
		"ratelimit.plane": "session", "ratelimit.admitted": true, "ratelimit.policy": "session"} {
		if got := root.tag(key); got != want {
			t.Errorf("the request's span has %s = %v, want %v", key, got, want)
		}
	}
	childOf := func(name string, parent jaegerSpan) jaegerSpan {
		t.Helper()
		for _, sp := range named(name) {
			if sp.parent() == parent.SpanID {
				return sp
			}
		}
		t.Fatalf("no span %q refers to %q:%s", name, parent.OperationName, tree.String())
		return jaegerSpan{}
	}
	childOf("INSERT", root) // the batch's statements
	enqueue := childOf("enqueue ingest", root)
	childOf("queue wait", enqueue)
	job := childOf("job ingest", enqueue)
	childOf("SELECT", job)

	var line string
	for l := range strings.Lines(p.logs.String()) {
		if strings.Contains(l, "route=/api/v1/memory/ingest") {
			line = l
		}
	}
	if !strings.Contains(line, "trace_id="+traceID) {
		t.Errorf("the ingest's access line does not carry trace_id=%s: %q", traceID, line)
	}
}
