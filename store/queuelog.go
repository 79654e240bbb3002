package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/brain-template/brain/internal/logsample"
)

// outageHandler is River's slog.Handler: records at WARN or above go on at
// WARN, each message once per interval with its repeats.
type outageHandler struct {
	next   slog.Handler
	counts *logsample.Counts // shared with WithAttrs' and WithGroup's
}

const maxOutageMessages = 100

func quietOutages(next slog.Handler, every time.Duration, now func() time.Time) slog.Handler {
	return &outageHandler{next: next, counts: logsample.New(every, now, maxOutageMessages)}
}

func (h *outageHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, min(l, slog.LevelWarn))
}

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

func (h *outageHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &outageHandler{next: h.next.WithAttrs(attrs), counts: h.counts}
}

func (h *outageHandler) WithGroup(name string) slog.Handler {
	return &outageHandler{next: h.next.WithGroup(name), counts: h.counts}
}
