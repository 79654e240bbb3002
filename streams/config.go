package streams

import (
	"time"

	"github.com/brain-template/brain/api"
)

// Config configures a stream plane ([New]); zero fields take defaults.
type Config struct {
	// Cap bounds each caller's open streams (a session's, an API key's)
	// across every stream endpoint: default NewMemoryCap(DefaultCap).
	Cap Cap
	// UserCap bounds each user's open streams, across all its sessions and
	// keys: default NewMemoryCap(DefaultUserCap). Its max must be at least
	// Cap's.
	UserCap Cap
	// Hub carries the callers' events: default an in-memory hub.
	Hub Hub
	// Heartbeat is how often an idle stream gets a comment line, which keeps
	// proxies from closing it, finds dead clients and renews its slots.
	Heartbeat time.Duration
	// RetryAfter is the Retry-After of a 429 of the caps.
	RetryAfter time.Duration
	// LiveAccess is who may follow GET /api/v1/system/live: api.Caller (the
	// default) or api.Admin.
	LiveAccess api.Access
}

// The stream plane's defaults.
const (
	DefaultCap        = 16
	DefaultUserCap    = 64
	DefaultHeartbeat  = 15 * time.Second
	DefaultRetryAfter = 5 * time.Second
	// The default in-memory hub's replay and per-subscription buffer.
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
