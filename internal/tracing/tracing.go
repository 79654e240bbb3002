// Package tracing turns on OpenTelemetry tracing from the standard
// environment. With OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, [Start] sends every span by OTLP
// over HTTP to it; without, tracing is off and costs nothing: the server
// mounts no span middleware, and the code that adds a span (a statement, a
// job, a limit's Redis round trip) does so only inside a recording one.
package tracing

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Start makes the process's tracer provider from getenv's OTLP endpoint, as
// the global one, and returns it with the function that flushes and stops it;
// it returns nil and no error when no endpoint is set. The other OTEL_
// variables (headers, timeout, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
// work as the exporter and the SDK document.
func Start(ctx context.Context, getenv func(string) string, service, version string) (trace.TracerProvider, func(context.Context) error, error) {
	url := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); url == "" && base != "" {
		url = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	if url == "" || getenv("OTEL_SDK_DISABLED") == "true" {
		return nil, nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version)), resource.WithFromEnv())
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp, tp.Shutdown, nil
}

// Logs wraps h so a record logged with a context in a span (slog's
// ...Context calls, the access line) carries its trace_id.
func Logs(h slog.Handler) slog.Handler { return traced{h} }

type traced struct{ slog.Handler }

func (h traced) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traced) WithAttrs(as []slog.Attr) slog.Handler { return traced{h.Handler.WithAttrs(as)} }
func (h traced) WithGroup(name string) slog.Handler    { return traced{h.Handler.WithGroup(name)} }
