package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brain-template/brain/internal/tracing"
)

// Tracing is off without an OTLP endpoint (or with the SDK disabled), and
// on with either variable: the spans reach the endpoint's /v1/traces, or
// the traces endpoint as given, when the provider is shut down.
func TestStartFollowsTheEnvironment(t *testing.T) {
	var posts atomic.Int32
	var path atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		path.Store(r.URL.Path)
		posts.Add(1)
	}))
	defer collector.Close()
	for _, tc := range []struct {
		env      map[string]string
		on       bool
		wantPath string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SDK_DISABLED": "true"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL + "/"}, true, "/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.URL + "/otlp/spans"}, true, "/otlp/spans"},
	} {
		posts.Store(0)
		tp, stop, err := tracing.Start(context.Background(), func(k string) string { return tc.env[k] }, "svc", "v1")
		if err != nil || (tp != nil) != tc.on {
			t.Fatalf("%v: provider %v, %v; want on: %v", tc.env, tp, err, tc.on)
		}
		if !tc.on {
			continue
		}
		_, span := tp.Tracer("test").Start(context.Background(), "work")
		span.End()
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if posts.Load() != 1 || path.Load() != tc.wantPath {
			t.Errorf("%v: %d posts to %v; want 1 to %s", tc.env, posts.Load(), path.Load(), tc.wantPath)
		}
	}
}
