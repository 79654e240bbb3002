package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/brain-template/brain/internal/logsample"
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
	counts *logsample.Counts // shared by the handlers WithAttrs and WithGroup make
}

// maxOutageMessages bounds the messages remembered: River's are a few
// dozen constant strings.
const maxOutageMessages = 100

// quietOutages returns next as River should log through it: at WARN or
// above, each message at WARN once per every (see outageHandler).
func quietOutages(next slog.Handler, every time.Duration, now func() time.Time) slog.Handler {
	return &outageHandler{next: next, counts: logsample.New(every, now, maxOutageMessages)}
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
	_, repeats, ok := h.counts.Take(r.Message)
	if !ok {
		return nil
	}
	out := slog.NewRecord(r.Time, slog.LevelWarn, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	out.AddAttrs(slog.Int("repeats", repeats))
	return h.next.Handle(ctx, out)
}

// WithAttrs returns a handler with attrs that shares h's counts.
func (h *outageHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &outageHandler{next: h.next.WithAttrs(attrs), counts: h.counts}
}

// WithGroup returns a handler in group name that shares h's counts.
func (h *outageHandler) WithGroup(name string) slog.Handler {
	return &outageHandler{next: h.next.WithGroup(name), counts: h.counts}
}
