package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/riverqueue/river"
)

// River's errors and warnings are logged at WARN, each message once a
// minute with how many times it came since; its other records pass as
// they are; handlers made from it share its counts.
func TestRiverLogsOutagesQuietly(t *testing.T) {
	var buf bytes.Buffer
	clock := testclock.New(t0)
	h := store.QuietOutages(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime}), time.Minute, clock.Now)
	log := slog.New(h)
	child := slog.New(h.WithAttrs([]slog.Attr{slog.String("service", "elector")}))
	for range 10 {
		log.Error("producer: error fetching jobs", "error", "connection refused")
		child.Error("producer: error fetching jobs", "error", "connection refused")
	}
	log.Info("producer: started")
	log.Warn("elector: lost leadership")
	clock.Advance(time.Minute)
	log.Error("producer: error fetching jobs", "error", "connection refused")
	want := `level=WARN msg="producer: error fetching jobs" error="connection refused" repeats=0
level=INFO msg="producer: started"
level=WARN msg="elector: lost leadership" repeats=0
level=WARN msg="producer: error fetching jobs" error="connection refused" repeats=19
`
	if buf.String() != want {
		t.Fatalf("logged:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// lockedBuffer is a log sink safe for River's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While PostgreSQL is cut off, a running Queue logs no ERROR, and each of
// River's complaints at most once.
func TestQueueOutageLogsNoErrors(t *testing.T) {
	u, err := url.Parse(storetest.URL(t, store.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	p := testproxy.New(t, u.Host)
	u.Host = p.Addr()
	db, err := store.Open(context.Background(), u.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	q, err := store.NewQueue(db, store.QuickStart(store.QueueOptions{
		PollInterval: 20 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddWorker(q, store.Worker[testArgs]{Work: func(context.Context, *river.Job[testArgs]) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	time.Sleep(3 * time.Second) // River's own intervals: its fetches, every 20 ms, fail the whole time
	p.Restore()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = q.Stop(ctx)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("an ERROR line during the outage: %s", l)
		}
		_, msg, _ := strings.Cut(l, "msg=")
		msg, _, _ = strings.Cut(msg, " error=")
		if seen[msg] {
			t.Errorf("logged twice within a minute: %s", msg)
		}
		seen[msg] = true
	}
	if len(seen) == 0 {
		t.Fatal("River logged nothing in 3 s of outage: the test did not cut the database off")
	}
	t.Logf("%d lines:\n%s", len(lines), logs.String())
}
