// Package middleware holds the net/http middleware every request to the
// server passes before its route: request id, nosniff, access log, panic
// recovery, body-error marking, client address, CORS and CSRF.
//
// Each is chi style (a func(http.Handler) http.Handler, or a constructor
// returning one), knows nothing of huma or of the operations, and is
// tested alone. [Stack] does the work of all of them in one layer, which
// is how package api mounts them: one copy of the request, one wrapped
// response writer, a short stack. What one needs of package api, such as the error envelope
// it answers with, it takes as a parameter: api imports middleware, never
// the reverse.
package middleware

// contextKey is the type of this package's request-context keys.
type contextKey struct{ name string }

// String names the key in a debugger or a log.
func (k *contextKey) String() string { return "middleware context value " + k.name }
