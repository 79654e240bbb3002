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
// (OpenTelemetry's otelhttp), named by its route once routed, "POST
// /api/v1/ingest", with its status. A traceparent header continues the
// caller's trace when the TCP peer is in trusted; anyone else's request
// starts a trace of its own, linked to the one it named. Mount it before
// [AccessLog], so the access line is in the span.
func Trace(tp trace.TracerProvider, trusted []netip.Prefix) func(http.Handler) http.Handler {
	untrusted := func(r *http.Request) bool {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		return err != nil || !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) })
	}
	// otelhttp names the span again once done if the request it passed on
	// learned its pattern (a copy made below it does not): both ways, this.
	name := func(_ string, r *http.Request) string {
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			return r.Method + " " + rc.RoutePattern()
		}
		return r.Method
	}
	return func(next http.Handler) http.Handler {
		named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			span := trace.SpanFromContext(r.Context())
			span.SetName(name("", r))
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				span.SetAttributes(attribute.String("http.route", rc.RoutePattern()))
			}
		})
		return otelhttp.NewHandler(named, "", otelhttp.WithTracerProvider(tp), otelhttp.WithPublicEndpointFn(untrusted),
			otelhttp.WithPropagators(propagation.TraceContext{}), otelhttp.WithSpanNameFormatter(name))
	}
}
