package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
)

// Recoverer returns a middleware that logs a handler's panic and answers
// with internal (nil: a bare 500) unless the response started; it
// re-raises http.ErrAbortHandler. Mount it inside [AccessLog].
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

func orStatus(h http.Handler, status int) http.Handler {
	if h != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
}
