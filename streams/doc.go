// Package streams serves Server-Sent Events and caps how many a caller may hold open at once.
package streams
