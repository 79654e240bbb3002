package store

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// outageHandler is the slog.Handler River logs through. River logs an
// ERROR each time one of its calls fails: while the database is down,
// several a second, from its producer, its elector and each of its
// maintenance services, for as long as the outage lasts. An outage is
// not a fault of brain's, and the rest of brain logs one at WARN, once a
// minute per cause. So here too: a record of River's at WARN or above
// goes on at WARN, each message once per interval, with how many times
// it came since its previous line (repeats). Records below WARN go on as
// they are.
//
// A message is the key, whatever its error: within the minute, another
// cause logged under the same message (a refused permission amid refused
// connections) waits for the next line, which carries the latest record's
// attributes; and the repeats since a message's last line are not logged
// until the message comes again.
type outageHandler struct {
	next   slog.Handler
	counts *outageCounts // shared by the handlers WithAttrs and WithGroup make
}

// outageCounts is when each message was last passed on, and how many
// times it came since.
type outageCounts struct {
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	messages map[string]*outageCount
}

type outageCount struct {
	logged  time.Time
	repeats int
}

// maxOutageMessages bounds the messages remembered: River's are a few
// dozen constant strings; past the bound a message is passed on without
// being remembered.
const maxOutageMessages = 100

// quietOutages returns next as River should log through it: at WARN or
// above, each message at WARN once per every (see outageHandler).
func quietOutages(next slog.Handler, every time.Duration, now func() time.Time) slog.Handler {
	return &outageHandler{next: next, counts: &outageCounts{every: every, now: now, messages: map[string]*outageCount{}}}
}

// Enabled reports whether next takes records of level l, at WARN for
// anything above it.
func (h *outageHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, min(l, slog.LevelWarn))
}

// Handle passes r on, or drops it as a repeat.
func (h *outageHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	repeats, ok := h.counts.take(r.Message)
	if !ok {
		return nil
	}
	out := slog.NewRecord(r.Time, slog.LevelWarn, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	out.AddAttrs(slog.Int("repeats", repeats))
	return h.next.Handle(ctx, out)
}

// take reports whether message is due to be logged, and how many times
// it came since it last was.
func (c *outageCounts) take(message string) (repeats int, due bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.messages[message]
	if m != nil && now.Sub(m.logged) < c.every {
		m.repeats++
		return 0, false
	}
	if m == nil {
		if len(c.messages) >= maxOutageMessages {
			return 0, true
		}
		m = &outageCount{}
		c.messages[message] = m
	}
	repeats, m.logged, m.repeats = m.repeats, now, 0
	return repeats, true
}

// WithAttrs returns a handler with attrs that shares h's counts.
func (h *outageHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &outageHandler{next: h.next.WithAttrs(attrs), counts: h.counts}
}

// WithGroup returns a handler in group name that shares h's counts.
func (h *outageHandler) WithGroup(name string) slog.Handler {
	return &outageHandler{next: h.next.WithGroup(name), counts: h.counts}
}
