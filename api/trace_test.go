package api_test

import (
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/testclock"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// With a tracer, each request's span tells its rate-limit decision: the
// plane, the policy that decided, and whether it was admitted.
func TestSpansTellTheRateLimitDecision(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	clk := testclock.New(t0)
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: small(clk), Now: clk.Now, Tracer: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	cookie, _ := loginAndKey(t, svc)
	for range 4 { // the session burst is 3
		send(t, s, "GET", "/api/v1/auth/me", cookie, "")
	}
	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want one per request", len(spans))
	}
	for i, sp := range spans {
		got := attribute.NewSet(sp.Attributes...)
		for key, want := range map[attribute.Key]attribute.Value{
			"ratelimit.plane": attribute.StringValue("session"), "ratelimit.policy": attribute.StringValue("session"),
			"ratelimit.admitted": attribute.BoolValue(i < 3), "http.response.status_code": attribute.IntValue(map[bool]int{true: 200, false: 429}[i < 3]),
		} {
			if v, ok := got.Value(key); !ok || v != want {
				t.Errorf("request %d: %s = %v, want %v", i+1, key, v.String(), want.String())
			}
		}
	}
}
