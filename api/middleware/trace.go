package middleware

import (
	"net/http"
	"net/netip"
	"slices"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace returns a middleware that runs each request in a span of tp
// (OpenTelemetry's otelhttp), named by its route once routed, "GET
// /api/v1/auth/me", with its status. A traceparent header continues the
// caller's trace when the TCP peer is in trusted; anyone else's request
// starts a trace of its own, linked to the one it named. Mount it before
// [AccessLog], so the access line is in the span.
func Trace(tp trace.TracerProvider, trusted []netip.Prefix) func(http.Handler) http.Handler {
	untrusted := func(r *http.Request) bool {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		return err != nil || !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) })
	}
	return func(next http.Handler) http.Handler {
		routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				r.Pattern = rc.RoutePattern() // otelhttp's span name; chi set it on its copy
				trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", r.Pattern))
			}
		})
		return otelhttp.NewHandler(routed, "", otelhttp.WithTracerProvider(tp), otelhttp.WithPublicEndpointFn(untrusted),
			otelhttp.WithPropagators(propagation.TraceContext{}))
	}
}
