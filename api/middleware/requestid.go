// This file gives every request an id (X-Request-Id).
package middleware

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
)

// RequestID is a middleware that gives every request an id, returns it as
// the X-Request-Id response header and stores it in the request context
// (read it with [GetRequestID]). An incoming X-Request-Id is kept when it is
// 1..64 characters of [A-Za-z0-9._-], so an id set by a proxy follows the
// request through; anything else is replaced by 16 random hex digits.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, st := withState(r)
		st.identify(w.Header(), r)
		next.ServeHTTP(w, r)
	})
}

// identify gives the request its id: st's, and the X-Request-Id of h.
func (st *state) identify(h http.Header, r *http.Request) {
	st.id = r.Header.Get("X-Request-Id")
	if !validRequestID(st.id) {
		st.id = newRequestID()
	}
	st.idv[0] = st.id
	h["X-Request-Id"] = st.idv[:] // canonical already: no need for Set's work
}

// GetRequestID returns the request id stored by [RequestID], or "".
func GetRequestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// newRequestID returns 16 random hex digits. An id needs to be unique,
// not secret: math/rand/v2's generator (ChaCha8, seeded by the runtime)
// gives that without a system call per request, which crypto/rand makes.
func newRequestID() string {
	var b [8]byte
	var text [16]byte // one allocation, the string's: EncodeToString makes two
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	hex.Encode(text[:], b[:])
	return string(text[:])
}
