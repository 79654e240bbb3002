package middleware_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api/middleware"
)

func TestRecoverer(t *testing.T) {
	internal := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code":"internal"}`))
	})
	// chain is the recoverer as the server mounts it: inside the
	// request id and the access log.
	chain := func(h http.HandlerFunc, internal http.Handler) (http.Handler, *logBuffer) {
		l, logs := newLogger()
		return middleware.RequestID(middleware.AccessLog(l, time.Now, nil)(middleware.Recoverer(internal)(h))), logs
	}
	request := func() *http.Request {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Request-Id", "trace-42")
		return req
	}

	t.Run("Answers", func(t *testing.T) {
		h, logs := chain(func(http.ResponseWriter, *http.Request) { panic("secret state") }, internal)
		rec := serve(h, request())
		if rec.Code != 500 || rec.Body.String() != `{"code":"internal"}` {
			t.Fatalf("got %d %q, want internal's answer", rec.Code, rec.Body)
		}
		line := logs.line("panic")
		if !strings.Contains(line, "request_id=trace-42") || !strings.Contains(line, `panic="secret state"`) || !strings.Contains(line, "stack=") {
			t.Fatalf("the panic line lacks its id, value or stack: %q", line)
		}
		if !strings.Contains(logs.line("request"), "status=500") {
			t.Fatalf("the access line does not record the 500:\n%s", logs)
		}
	})
	t.Run("NilInternal", func(t *testing.T) {
		h, _ := chain(func(http.ResponseWriter, *http.Request) { panic("x") }, nil)
		if rec := serve(h, request()); rec.Code != 500 || rec.Body.Len() != 0 {
			t.Fatalf("got %d %q, want a bare 500", rec.Code, rec.Body)
		}
	})
	t.Run("AfterStart", func(t *testing.T) {
		h, logs := chain(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte("partial"))
			panic("late")
		}, internal)
		rec := serve(h, request())
		if rec.Code != 202 || rec.Body.String() != "partial" {
			t.Fatalf("got %d %q: a started response must be left alone", rec.Code, rec.Body)
		}
		if logs.line("panic") == "" {
			t.Fatal("a panic after the response started is not logged")
		}
	})
	t.Run("AbortHandler", func(t *testing.T) {
		h, logs := chain(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, internal)
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler re-raised", v)
			}
			if logs.line("panic") != "" {
				t.Fatal("an aborted handler is logged as a panic")
			}
		}()
		serve(h, request())
	})
	t.Run("WrappedAbortHandler", func(t *testing.T) {
		h, _ := chain(func(http.ResponseWriter, *http.Request) { panic(errors.Join(errors.New("x"), http.ErrAbortHandler)) }, internal)
		defer func() {
			if v, _ := recover().(error); !errors.Is(v, http.ErrAbortHandler) {
				t.Fatalf("recovered %v, want the abort re-raised", v)
			}
		}()
		serve(h, request())
	})
}
