// This file is the one context value in which the middleware of this
// package keep what they learn of a request: its id, its logger, and what
// the access log is told as the request is served.
package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
)

var stateKey = &contextKey{"request-state"}

// state is what this package's middleware keep of one request. The first
// of them a request meets puts it in the context; the others fill it in,
// so the chain copies the request for it once, not once each. The
// middleware and handlers that learn the client's address and the user
// run inside the access log, so they cannot hand it back in a context:
// they write it here.
type state struct {
	id   string       // RequestID's
	idv  [1]string    // X-Request-Id's value, id: no slice of its own
	base *slog.Logger // AccessLog's
	rec  recorder     // AccessLog's: what the handlers inside write to

	mu       sync.Mutex
	ip, user string       // told to the access log
	l        *slog.Logger // base with the request id, once asked for
}

// stateOf returns the state of ctx, or nil outside this package's
// middleware.
func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey).(*state)
	return st
}

// withState returns r with a state, and that state: the one r has, else a
// new one in a copy of r.
func withState(r *http.Request) (*http.Request, *state) {
	if st := stateOf(r.Context()); st != nil {
		return r, st
	}
	st := &state{}
	return r.WithContext(context.WithValue(r.Context(), stateKey, st)), st
}

// logger is the request's logger: base with its request id.
func (st *state) logger() *slog.Logger {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.l == nil {
		st.l = st.base.With(slog.String("request_id", st.id))
	}
	return st.l
}

func (st *state) read() (ip, user string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ip, st.user
}
