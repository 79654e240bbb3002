package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/brain-template/brain/api/middleware"
	"github.com/go-chi/chi/v5"
)

// stackRouter is a router behind Chain as package api mounts it, with the
// answers it takes from api made recognisable.
func stackRouter(t *testing.T, cfg middleware.Config, routes func(chi.Router)) (http.Handler, *logBuffer) {
	t.Helper()
	l, logs := newLogger()
	cfg.Logger = l
	cfg.Internal = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "internal envelope")
	})
	cfg.CrossSite = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "cross-site envelope")
	})
	r := chi.NewRouter()
	r.Use(middleware.Chain(cfg)...)
	routes(r)
	return r, logs
}

// Chain does each middleware's work, in their order: a panic is answered
// inside the access log (which records the 500, the client and the id),
// with the headers of the layers outside it.
func TestChainPanicIsLoggedWithEverything(t *testing.T) {
	h, logs := stackRouter(t, middleware.Config{}, func(r chi.Router) {
		r.Get("/boom/{n}", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
	})
	req := httptest.NewRequest("GET", "/boom/1", nil)
	req.RemoteAddr = "[::ffff:192.0.2.7]:5555"
	req.Header.Set("X-Request-Id", "trace-9")
	rec := serve(h, req)
	if rec.Code != 500 || rec.Body.String() != "internal envelope" {
		t.Fatalf("%d %q, want the 500 envelope", rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Request-Id") != "trace-9" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", rec.Header())
	}
	line := logs.line("request")
	for _, want := range []string{"request_id=trace-9", "route=/boom/{n}", "status=500", "ip=192.0.2.7 "} {
		if !strings.Contains(line, want) {
			t.Errorf("access line %q lacks %q", line, want)
		}
	}
	if p := logs.line("panic"); !strings.Contains(p, "request_id=trace-9") || !strings.Contains(p, "kaboom") {
		t.Errorf("panic line %q", p)
	}
}

// After the response has started a panic cannot be answered: the access
// log keeps the status that went out.
func TestChainPanicAfterTheHeaders(t *testing.T) {
	h, logs := stackRouter(t, middleware.Config{}, func(r chi.Router) {
		r.Get("/", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "partial")
			panic("late")
		})
	})
	rec := serve(h, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusAccepted || rec.Body.String() != "partial" {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
	if line := logs.line("request"); !strings.Contains(line, "status=202") || !strings.Contains(line, "bytes=7") {
		t.Fatalf("access line %q", line)
	}
}

// HEAD is served by the GET route; CSRF refuses a cross-site change with
// its answer (logged), and lets through what exempt names.
func TestChainHeadAndCSRF(t *testing.T) {
	h, logs := stackRouter(t, middleware.Config{
		CSRFExempt: func(r *http.Request) bool { return r.Header.Get("X-API-Key") != "" },
	}, func(r chi.Router) {
		r.Get("/thing", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Got", "get") })
		r.Post("/thing", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	})
	if rec := serve(h, httptest.NewRequest("HEAD", "/thing", nil)); rec.Code != 200 || rec.Header().Get("X-Got") != "get" {
		t.Fatalf("HEAD: %d %v", rec.Code, rec.Header())
	}
	cross := func() *http.Request {
		req := httptest.NewRequest("POST", "/thing", nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		return req
	}
	if rec := serve(h, cross()); rec.Code != 403 || rec.Body.String() != "cross-site envelope" {
		t.Fatalf("cross-site POST: %d %q", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "method=POST route=- status=403") {
		t.Fatalf("the refusal is not logged: %s", logs)
	}
	req := cross()
	req.Header.Set("X-API-Key", "k")
	if rec := serve(h, req); rec.Code != 201 {
		t.Fatalf("exempt cross-site POST: %d", rec.Code)
	}
}

// With origins, a preflight is answered without a route; behind a trusted
// proxy the client is the forwarded address.
func TestChainCORSAndTrustedProxies(t *testing.T) {
	var seen string
	h, logs := stackRouter(t, middleware.Config{
		Origins:        []string{"https://app.example"},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	}, func(r chi.Router) {
		r.Get("/ip", func(_ http.ResponseWriter, r *http.Request) { seen = middleware.GetClientIP(r.Context()) })
	})
	pre := httptest.NewRequest("OPTIONS", "/anywhere", nil)
	pre.Header.Set("Origin", "https://app.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	rec := serve(h, pre)
	if rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" || rec.Header().Get("X-Request-Id") == "" {
		t.Fatalf("preflight: %d %v", rec.Code, rec.Header())
	}
	req := httptest.NewRequest("GET", "/ip", nil)
	req.RemoteAddr = "10.1.2.3:999"
	req.Header.Set("X-Forwarded-For", "203.0.113.5, 10.9.9.9")
	serve(h, req)
	if seen != "203.0.113.5" || !strings.Contains(logs.String(), "ip=203.0.113.5") {
		t.Fatalf("client %q; log %s", seen, logs)
	}
}

// A body's read error reaches the handler marked as the client's, and a
// stream's flush reaches the connection through the recorder.
func TestChainBodyAndFlush(t *testing.T) {
	var readErr error
	h, _ := stackRouter(t, middleware.Config{}, func(r chi.Router) {
		r.Post("/", func(_ http.ResponseWriter, r *http.Request) { _, readErr = io.ReadAll(r.Body) })
		r.Get("/stream", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "data: 1\n\n")
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
		})
	})
	serve(h, httptest.NewRequest("POST", "/", io.NopCloser(failingReader{})))
	var re *middleware.ReadError
	if !errors.As(readErr, &re) {
		t.Fatalf("read error %v is not marked", readErr)
	}
	if rec := serve(h, httptest.NewRequest("GET", "/stream", nil)); !rec.Flushed {
		t.Fatal("the flush did not reach the connection's writer")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
