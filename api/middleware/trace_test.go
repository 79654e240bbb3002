package middleware_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/internal/tracing"
	"github.com/go-chi/chi/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedRouter is a chi router with Chain's middleware, tracing into an
// in-memory exporter, trusting 10.0.0.0/8 as callers, and one route that
// logs through the request's logger, the server's wrapped as when tracing
// is on.
func tracedRouter(logs *logBuffer) (chi.Router, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	r := chi.NewRouter()
	r.Use(middleware.Chain(middleware.Config{
		Logger:         slog.New(tracing.Logs(slog.NewTextHandler(logs, nil))),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Tracer:         tp,
	})...)
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		middleware.Logger(r.Context()).Info("inside")
		w.WriteHeader(http.StatusTeapot)
	})
	return r, exp
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// A traceparent continues the caller's trace only from a trusted peer;
// anyone else's request starts a trace of its own, linked to the one it
// named. Either way the span is named by the route, not the path.
func TestTraceTrustsOnlyTrustedCallers(t *testing.T) {
	for _, tc := range []struct {
		peer      string
		continues bool
	}{{"10.1.2.3:5000", true}, {"192.0.2.7:5000", false}} {
		t.Run(tc.peer, func(t *testing.T) {
			logs := &logBuffer{}
			r, exp := tracedRouter(logs)
			req := httptest.NewRequest("GET", "/things/42", nil)
			req.RemoteAddr = tc.peer
			req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
			if rec := serve(r, req); rec.Code != http.StatusTeapot {
				t.Fatalf("status %d", rec.Code)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name != "GET /things/{id}" {
				t.Errorf("span named %q, want the route's GET /things/{id}", s.Name)
			}
			inCallers := s.SpanContext.TraceID().String() == callerTrace
			if inCallers != tc.continues || (tc.continues && s.Parent.SpanID().String() != callerSpan) {
				t.Errorf("span in trace %s with parent %s; continues the caller's: %v, want %v",
					s.SpanContext.TraceID(), s.Parent.SpanID(), inCallers, tc.continues)
			}
			if !tc.continues && (len(s.Links) != 1 || s.Links[0].SpanContext.SpanID().String() != callerSpan) {
				t.Errorf("an untrusted caller's span has links %+v, want one to the span it named", s.Links)
			}
			status := false
			for _, a := range s.Attributes {
				status = status || (a.Key == "http.response.status_code" && a.Value.AsInt64() == http.StatusTeapot)
			}
			if !status {
				t.Errorf("the span does not have the status 418: %v", s.Attributes)
			}
			want := "trace_id=" + s.SpanContext.TraceID().String()
			for _, msg := range []string{"inside", "request"} { // the handler's line and the access line
				if l := logs.line(msg); !strings.Contains(l, want) {
					t.Errorf("the %q line does not carry %s: %q", msg, want, l)
				}
			}
		})
	}
}
