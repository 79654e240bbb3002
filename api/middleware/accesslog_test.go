package middleware_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api/middleware"
	"github.com/go-chi/chi/v5"
)

func TestAccessLog(t *testing.T) {
	l, logs := newLogger()
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	type seen struct {
		route  string
		status int
		took   time.Duration
	}
	var observed []seen
	observe := func(route string, status int, took time.Duration) {
		observed = append(observed, seen{route, status, took})
	}

	r := chi.NewRouter()
	r.Use(middleware.RequestID, middleware.AccessLog(l, now, observe))
	r.Get("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		clock = clock.Add(1500 * time.Millisecond)
		middleware.Logger(r.Context()).Info("inside")
		_, _ = w.Write([]byte("hello"))
	})
	r.Get("/silent", func(http.ResponseWriter, *http.Request) {})

	req := httptest.NewRequest("GET", "/items/42", nil)
	req.Header.Set("X-Request-Id", "trace-7")
	serve(r, req)
	line := logs.line("request")
	for _, want := range []string{"request_id=trace-7", "method=GET", "route=/items/{id}", "status=200", "bytes=5", "duration=1.5s", "ip=", "user="} {
		if !strings.Contains(line, want) {
			t.Errorf("access line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "/items/42") {
		t.Errorf("access line %q holds the raw path, not the route", line)
	}
	if in := logs.line("inside"); !strings.Contains(in, "request_id=trace-7") {
		t.Errorf("the handler's logger does not carry the request id: %q", in)
	}

	serve(r, httptest.NewRequest("GET", "/nope", nil))
	serve(r, httptest.NewRequest("GET", "/silent", nil))
	want := []seen{{"/items/{id}", 200, 1500 * time.Millisecond}, {"-", 404, 0}, {"/silent", 200, 0}}
	if len(observed) != len(want) {
		t.Fatalf("observed %v, want %v", observed, want)
	}
	for i := range want {
		if observed[i] != want[i] {
			t.Errorf("observed[%d] = %v, want %v", i, observed[i], want[i])
		}
	}
	if !strings.Contains(logs.String(), "route=- status=404") {
		t.Errorf("an unmatched request should log route=- and its 404:\n%s", logs)
	}

	// observe may be nil.
	l2, logs2 := newLogger()
	serve(middleware.AccessLog(l2, now, nil)(http.NotFoundHandler()), httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(logs2.line("request"), "status=404") {
		t.Errorf("without observe, no access line:\n%s", logs2)
	}
}

func TestAccessLogNeedsLogger(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AccessLog accepted a nil logger")
		}
	}()
	middleware.AccessLog(nil, time.Now, nil)
}

func TestLoggerOutsideRequest(t *testing.T) {
	if middleware.Logger(context.Background()) != slog.Default() {
		t.Fatal("Logger outside a request is not slog.Default")
	}
	l, _ := newLogger()
	bg := middleware.WithLogger(context.Background(), l)
	if middleware.Logger(bg) != l {
		t.Fatal("Logger of background work started with WithLogger is not its logger")
	}
	// A request whose context has one too logs with the request's, which
	// carries its id.
	reqLog, logs := newLogger()
	h := middleware.RequestID(middleware.AccessLog(reqLog, time.Now, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleware.Logger(r.Context()).Info("inside")
	})))
	req := httptest.NewRequestWithContext(bg, "GET", "/", nil)
	req.Header.Set("X-Request-Id", "trace-8")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !strings.Contains(logs.String(), "msg=inside request_id=trace-8") {
		t.Fatalf("the request logged %q, want its line with its id", logs.String())
	}
}
