// Package auth resolves who is calling: users, sessions, API keys, the login throttle, CSRF and CORS.
package auth
