package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
)

// Recoverer returns a middleware that turns a panic in a handler into the
// answer internal writes (package api's 500 envelope, nothing of the panic
// in it; nil: a bare 500) and logs the panic and its stack on the
// request's [Logger]. If the response had started, it can only log.
// http.ErrAbortHandler is re-raised so net/http aborts the connection.
// Mount it inside [AccessLog], whose writer tells whether the response
// started.
func Recoverer(internal http.Handler) func(http.Handler) http.Handler {
	internal = orStatus(internal, http.StatusInternalServerError)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				Logger(r.Context()).Error("panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if ww, ok := w.(interface{ Status() int }); !ok || ww.Status() == 0 {
					internal.ServeHTTP(w, r)
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// orStatus is h, or when h is nil a handler that writes only status.
func orStatus(h http.Handler, status int) http.Handler {
	if h != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
}
