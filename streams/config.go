package streams

import (
	"time"

	"github.com/brain-template/brain/api"
)

// Config configures a stream plane ([New]). Zero fields take their
// defaults.
type Config struct {
	// Cap bounds each caller's open streams (a session's, an API key's),
	// across every stream endpoint: default NewMemoryCap(DefaultCap).
	Cap Cap
	// UserCap bounds each user's open streams, across all of the user's
	// sessions and API keys and every stream endpoint: default
	// NewMemoryCap(DefaultUserCap). Its Max must be at least Cap's
	// (api.Server.Err says so).
	UserCap Cap
	// Hub carries the callers' events: default an in-memory hub.
	Hub Hub
	// Heartbeat is how often an idle stream gets a comment line, which
	// keeps proxies from closing it, finds dead clients, and renews the
	// stream's slot: default 15 s.
	Heartbeat time.Duration
	// RetryAfter is the Retry-After of a 429 of the caps: their slots
	// free when some stream ends, which no clock predicts. Default 5 s.
	// (An open budget's is the time until it admits an open, as for any
	// budget; they are api.Limits.StreamOpens and StreamUserOpens.)
	RetryAfter time.Duration
	// LiveAccess is who may follow GET /api/v1/system/live, which shows
	// this replica's load: api.Caller (the default when empty: every
	// session and API key) or api.Admin (the user admin only).
	LiveAccess api.Access
}

// The stream plane's defaults.
const (
	DefaultCap        = 16
	DefaultUserCap    = 64
	DefaultHeartbeat  = 15 * time.Second
	DefaultRetryAfter = 5 * time.Second
	// defaultReplay and defaultBuffer size the default in-memory hub: the
	// events kept for reconnects, and those a slow stream may fall
	// behind by before it is closed.
	defaultReplay = 1024
	defaultBuffer = 64
	// retry is the reconnection delay a stream asks clients for.
	retry = 3 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Cap == nil {
		c.Cap = NewMemoryCap(DefaultCap)
	}
	if c.UserCap == nil {
		c.UserCap = NewMemoryCap(DefaultUserCap)
	}
	if c.Hub == nil {
		c.Hub = NewMemoryHub(defaultReplay, defaultBuffer)
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.LiveAccess == "" {
		c.LiveAccess = api.Caller
	}
	return c
}
