// Package middleware holds the net/http middleware every request to the
// server passes before its route: request id, nosniff, access log, panic
// recovery, body-error marking, client address, CORS and CSRF.
//
// Each is chi style, knows nothing of huma, and is tested alone; [Chain]
// lists them in the order package api mounts them. What one needs of
// package api, such as the error envelope, it takes as a parameter.
package middleware

// contextKey is the type of this package's request-context keys.
type contextKey struct{ name string }

// String names the key in a debugger or a log.
func (k *contextKey) String() string { return "middleware context value " + k.name }
