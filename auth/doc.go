// Package auth resolves who is calling: users and their passwords, sessions,
// API keys, and the login throttle. It holds the rules; package store keeps
// the rows and package api speaks HTTP.
package auth
