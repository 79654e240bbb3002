package logtext

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// both logs the same record through slog's TextHandler and through a
// Handler, and returns the two outputs.
func both(t testing.TB, opts *slog.HandlerOptions, log func(l *slog.Logger)) (want, got string) {
	var std, fast bytes.Buffer
	log(slog.New(slog.NewTextHandler(&std, opts)))
	log(slog.New(New(&fast, opts)))
	return std.String(), fast.String()
}

// The fast path writes what the TextHandler writes, for the access log's
// record and for awkward values: quoting, escapes, invalid UTF-8, odd
// runes, empty strings, every kind it takes, and levels between the named.
func TestSameBytesAsTextHandler(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 37, 9, 123456789, time.FixedZone("X", 3600))
	for _, attrs := range [][]slog.Attr{
		{slog.String("request_id", "0123456789abcdef"), slog.String("method", "GET"), slog.String("route", "/api/v1/jobs/{id}"), slog.Int("status", 200),
			slog.Int("bytes", 120), slog.Duration("duration", 1234567*time.Nanosecond), slog.String("ip", "::1"), slog.String("user", "")},
		{slog.String("a b", "c=d"), slog.String("q", `say "hi"`), slog.String("bs", `C:\dir`), slog.String("nl", "x\ny"), slog.String("tab", "\t")},
		{slog.String("bad", "\xff\xfe"), slog.String("nbsp", "a\u00a0b"), slog.String("zw", "a\u200bb"), slog.String("del", "a\x7fb"), slog.String("ü", "grüß")},
		{slog.Int64("neg", -42), slog.Uint64("big", 1<<63), slog.Bool("yes", true), slog.Bool("no", false), slog.Duration("zero", 0), slog.Duration("h", 90*time.Minute)},
		{},
	} {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn + 2, slog.LevelError} {
			for _, msg := range []string{"request", "", "two words", "quote\"d"} {
				want, got := both(t, &slog.HandlerOptions{Level: slog.LevelDebug}, func(l *slog.Logger) {
					r := slog.NewRecord(at, level, msg, 0)
					r.AddAttrs(attrs...)
					_ = l.Handler().Handle(context.Background(), r)
				})
				if got != want {
					t.Errorf("got  %s\nwant %s", got, want)
				}
			}
		}
	}
}

// What the fast path does not take goes to the TextHandler: groups, other
// kinds, With, a zero time; and the level still filters.
func TestTheRestIsTheTextHandlers(t *testing.T) {
	for name, log := range map[string]func(l *slog.Logger){
		"group":     func(l *slog.Logger) { l.Info("m", slog.Group("g", slog.Int("a", 1))) },
		"any":       func(l *slog.Logger) { l.Info("m", "err", io.EOF, "f", 1.5, "t", time.Unix(0, 0).UTC()) },
		"with":      func(l *slog.Logger) { l.With("request_id", "x").Info("m", "a", 1) },
		"withGroup": func(l *slog.Logger) { l.WithGroup("g").Info("m", "a", 1) },
		"any after": func(l *slog.Logger) { l.Info("m", "a", 1, "b", "two words", "err", io.EOF) },
		"empty key": func(l *slog.Logger) {
			l.LogAttrs(context.Background(), slog.LevelInfo, "m", slog.Int("a", 1), slog.String("", "v"))
		},
		"debug": func(l *slog.Logger) { l.Debug("hidden") },
		"zero time": func(l *slog.Logger) {
			_ = l.Handler().Handle(context.Background(), slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0))
		},
	} {
		want, got := both(t, nil, log)
		if name != "zero time" {
			want, got = dropTime(want), dropTime(got)
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	want, got := both(t, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "time" {
			return slog.Attr{}
		}
		return a
	}}, func(l *slog.Logger) { l.Info("m", "a", 1) })
	if got != want || strings.Contains(got, "time=") {
		t.Errorf("ReplaceAttr: got %q, want %q", got, want)
	}
}

// dropTime cuts each line's time, which differs between two calls.
func dropTime(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "time=") {
			_, l, _ = strings.Cut(l, " ")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func FuzzSameBytesAsTextHandler(f *testing.F) {
	f.Add("request", "k", "v", int64(1), int64(1500))
	f.Add("", "", "", int64(-1), int64(0))
	f.Add("a=b", "k k", "\"\\\x00\u2028", int64(1<<62), int64(-1))
	at := time.Date(2026, 12, 2, 5, 37, 9, 999999999, time.UTC)
	f.Fuzz(func(t *testing.T, msg, key, val string, n, d int64) {
		want, got := both(t, nil, func(l *slog.Logger) {
			r := slog.NewRecord(at, slog.LevelInfo, msg, 0)
			r.AddAttrs(slog.String(key, val), slog.Int64("n", n), slog.Duration("d", time.Duration(d)), slog.String("k2", key+val))
			_ = l.Handler().Handle(context.Background(), r)
		})
		if got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	})
}

func BenchmarkAccessLine(b *testing.B) {
	at := time.Now()
	for name, h := range map[string]slog.Handler{"text_handler": slog.NewTextHandler(io.Discard, nil), "logtext": New(io.Discard, nil)} {
		b.Run(name, func(b *testing.B) {
			l := slog.New(h)
			b.ReportAllocs()
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("request_id", "0123456789abcdef"), slog.String("method", "GET"),
					slog.String("route", "/api/v1/auth/me"), slog.Int("status", 200), slog.Int("bytes", 120), slog.Duration("duration", time.Since(at)),
					slog.String("ip", "127.0.0.1"), slog.String("user", "3f2a9c0e5b7d4e1fa2c3d4e5f6a7b8c9"))
			}
		})
	}
}
