package api

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/go-chi/chi/v5/middleware"
)

// Recoverer is a middleware that turns a panic in a handler into the 500
// envelope (code "internal", nothing of the panic in the body) and logs the
// panic and its stack with the request id. If the response had already
// started, it can only log. http.ErrAbortHandler is re-raised so net/http
// aborts the connection as it intends. Mount it inside [AccessLog] so the
// access line records the 500.
func Recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			logger(r.Context()).Error("panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
				return // headers are gone; the client sees a cut response
			}
			WriteError(w, NewError(http.StatusInternalServerError, ""))
		}()
		next.ServeHTTP(w, r)
	})
}
