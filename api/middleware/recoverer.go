// This file turns a handler's panic into an answer and a log line.
package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
)

// Recoverer returns a middleware that turns a panic in a handler into the
// answer internal writes (package api gives its 500 envelope: code
// "internal", nothing of the panic in the body; nil: a bare 500) and logs
// the panic and its stack on the request's logger ([Logger], which carries
// the request id). If the response had already started, it can only log.
// http.ErrAbortHandler is re-raised so net/http aborts the connection as
// it intends. Mount it inside [AccessLog] so the access line records the
// 500, and so it can tell whether the response started.
func Recoverer(internal http.Handler) func(http.Handler) http.Handler {
	internal = orStatus(internal, http.StatusInternalServerError)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					recovered(v, w, r, internal)
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// recovered answers and logs the panic v of the handler serving w and r.
func recovered(v any, w http.ResponseWriter, r *http.Request, internal http.Handler) {
	if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		panic(v)
	}
	Logger(r.Context()).Error("panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if ww, ok := w.(interface{ Status() int }); ok && ww.Status() != 0 {
		return // headers are gone; the client sees a cut response
	}
	internal.ServeHTTP(w, r)
}

// orStatus is h, or when h is nil a handler that writes only status.
func orStatus(h http.Handler, status int) http.Handler {
	if h != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
}
