package streams_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
	"github.com/redis/rueidis"
)

// replicas returns n hubs on one stream, each on its own client as
// replicas are, with their Run loops going until the test ends.
func replicas(t *testing.T, n, maxLen, buffer int) []*streams.RedisHub {
	t.Helper()
	prefix := redistest.Prefix(t)
	hubs := make([]*streams.RedisHub, n)
	for i := range hubs {
		hubs[i] = streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, maxLen, buffer)
		run(t, hubs[i])
	}
	return hubs
}

// run runs h's loop until the test ends, and then checks that it ended.
func run(t *testing.T, h *streams.RedisHub) {
	h.OnError = func(err error) { t.Errorf("Run: %v", err) }
	runLoop(t, h.Run)
}

// runLoop runs a hub's Run loop until the test ends, and then checks
// that it ended.
func runLoop(t *testing.T, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
}

// receive waits for n events on s.
func receive(t *testing.T, s *streams.Subscription, n int) []streams.Event {
	t.Helper()
	var out []streams.Event
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, s.Err())
			}
			out = append(out, *ev)
		case <-timeout:
			t.Fatalf("%d of %d events within 5 s", len(out), n)
		}
	}
	return out
}

// caughtUp returns once h's Run has delivered every event published
// before: Subscribe replays only up to where Run has read, and the tests
// below want all in Replay.
func caughtUp(t *testing.T, h *streams.RedisHub) {
	t.Helper()
	s := subscribe(t, h, "sync", "")
	defer s.Close()
	id := publish(t, h, "sync", "sync")
	// An earlier caughtUp's event, published on another replica, can
	// reach s first when h's Run had not read it yet: skip to ours.
	for {
		ev := receive(t, s, 1)[0]
		if ev.ID == id {
			return
		}
		if streams.CompareIDs(ev.ID, id) > 0 {
			t.Fatalf("sync got %s, after %s", ev.ID, id)
		}
	}
}

func TestRedisHubDeliversAcrossReplicas(t *testing.T) {
	hubs := replicas(t, 2, 1000, 16)
	a, b := hubs[0], hubs[1]
	onB := subscribe(t, b, "alice", "")
	onA := subscribe(t, a, "alice", "")
	bob := subscribe(t, b, "bob", "")

	id := publish(t, a, "alice", "apikey.created")
	for _, s := range []*streams.Subscription{onB, onA} { // the other replica, and its own
		ev := receive(t, s, 1)[0]
		if ev.ID != id || ev.Type != "apikey.created" || ev.To != "alice" || string(ev.Data) != `{"n":"apikey.created"}` {
			t.Fatalf("got %+v, want event %s as published", ev, id)
		}
	}
	// bob's next event is his own: alice's never reached him.
	mine := publish(t, b, "bob", "b")
	if ev := receive(t, bob, 1)[0]; ev.ID != mine {
		t.Fatalf("bob got %+v, want his event %s", ev, mine)
	}
	// No data stays no data.
	if _, err := a.Publish(context.Background(), streams.Event{Type: "ping", To: "alice"}); err != nil {
		t.Fatal(err)
	}
	if ev := receive(t, onB, 1)[0]; ev.Type != "ping" || ev.Data != nil {
		t.Fatalf("got %+v, want a ping without data", ev)
	}
}

// An id within the stream's range that is none of its entries (of
// another stream: stream ids are only unique within one) is a gap, not a
// place to replay from.
func TestRedisHubForeignIDIsAGap(t *testing.T) {
	h := replicas(t, 1, 1000, 16)[0]
	first := publish(t, h, "alice", "first")
	publish(t, h, "alice", "second")
	caughtUp(t, h)
	ms, seq, _ := strings.Cut(first, "-")
	n, _ := strconv.Atoi(seq)
	foreign := ms + "-" + strconv.Itoa(n+1000) // after first, before second or in its millisecond: no entry
	s := subscribe(t, h, "alice", foreign)
	if !s.Gap {
		t.Fatalf("resumed from %s, no entry of the stream (first %s): no gap, replay %v", foreign, first, ids(s.Replay))
	}
	if s := subscribe(t, h, "alice", first); s.Gap || len(s.Replay) != 1 {
		t.Fatalf("resumed from its own entry %s: gap %v, replay %v; want the second, no gap", first, s.Gap, ids(s.Replay))
	}
}

func TestRedisHubResumesOnAnotherReplica(t *testing.T) {
	hubs := replicas(t, 2, 1000, 16)
	a, b := hubs[0], hubs[1]
	s := subscribe(t, a, "alice", "")
	var sent []string
	for i := range 3 {
		sent = append(sent, publish(t, a, "alice", fmt.Sprint(i)))
	}
	last := receive(t, s, 3)[2].ID
	s.Close() // the stream drops; it reconnects to b, which missed nothing
	for i := range 3 {
		publish(t, a, "bob", fmt.Sprint("b", i))
		sent = append(sent, publish(t, a, "alice", fmt.Sprint(i+3)))
	}
	r := subscribe(t, b, "alice", last)
	// b's Run may not have read all of them yet: what it has not is live.
	got := ids(r.Replay)
	got = append(got, ids(receive(t, r, 3-len(got)))...)
	if !slices.Equal(got, sent[3:]) || r.Gap {
		t.Fatalf("resumed after %s: %v (gap %v), want %v", last, got, r.Gap, sent[3:])
	}
	next := publish(t, a, "alice", "next")
	if ev := receive(t, r, 1)[0]; ev.ID != next {
		t.Fatalf("then got %s, want %s: a duplicate?", ev.ID, next)
	}
}

// TestRedisHubResumeRacesPublish subscribes with an after on one replica
// while another publishes: Replay then Events hold every later event once.
func TestRedisHubResumeRacesPublish(t *testing.T) {
	const n = 300
	hubs := replicas(t, 2, 10_000, n)
	a, b := hubs[0], hubs[1]
	var (
		mu   sync.Mutex
		sent []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			id := publish(t, a, "alice", fmt.Sprint(i))
			mu.Lock()
			sent = append(sent, id)
			mu.Unlock()
		}
	}()
	for {
		mu.Lock()
		k := len(sent)
		mu.Unlock()
		if k >= n/3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	after := sent[len(sent)/2]
	mu.Unlock()
	s := subscribe(t, b, "alice", after)
	<-done
	want := sent[slices.Index(sent, after)+1:]
	got := ids(s.Replay)
	if len(got) == 0 {
		t.Log("nothing to replay: the join was not exercised")
	}
	got = append(got, ids(receive(t, s, len(want)-len(got)))...)
	if !slices.Equal(got, want) || s.Gap {
		t.Fatalf("after %s: %d events (%d replayed, gap %v), want %d in order", after, len(got), len(s.Replay), s.Gap, len(want))
	}
}

// TestRedisHubSkipsWhatTheSubscriberHas: a subscriber resumes, with an id
// from a replica whose Run is ahead, on a replica whose Run has not yet
// read that far. Events up to its id are not sent again.
func TestRedisHubSkipsWhatTheSubscriberHas(t *testing.T) {
	prefix := redistest.Prefix(t)
	a := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, 1000, 16)
	b := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, 1000, 16)
	subscribe(t, b, "alice", "").Close() // b knows where it starts; its Run waits
	var sent []string
	for i := range 4 {
		sent = append(sent, publish(t, a, "alice", fmt.Sprint(i)))
	}
	s := subscribe(t, b, "alice", sent[1])
	if s.Gap || len(s.Replay) != 0 {
		t.Fatalf("replay %v gap %v: b's Run has read nothing, so all is live", ids(s.Replay), s.Gap)
	}
	future := subscribe(t, b, "alice", "99999999999999-0") // not an id of this stream
	if !future.Gap {
		t.Fatal("an id past the stream's end: no gap")
	}
	run(t, b)
	if got := ids(receive(t, s, 2)); !slices.Equal(got, sent[2:]) {
		t.Fatalf("live %v, want %v", got, sent[2:])
	}
	if got := ids(receive(t, future, 4)); !slices.Equal(got, sent) {
		t.Fatalf("after a foreign id: live %v, want all of %v", got, sent)
	}
}

func TestRedisHubGap(t *testing.T) {
	const maxLen = 10
	prefix := redistest.Prefix(t)
	h := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, maxLen, 16)
	run(t, h)
	// Redis trims only whole blocks of entries: publish until it has.
	var sent []string
	for i := range 400 {
		to := "bob"
		if i%20 == 0 {
			to = "alice"
		}
		sent = append(sent, publish(t, h, to, fmt.Sprint(i)))
	}
	caughtUp(t, h)
	client := redistest.Client(t, redistest.Option(t))
	kept, err := client.Do(context.Background(), client.B().Xrange().Key(prefix+"events").Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) == len(sent) || len(kept) < maxLen {
		t.Fatalf("stream holds %d of %d entries: not trimmed to about %d", len(kept), len(sent), maxLen)
	}
	first := kept[0].ID
	aliceAfter := func(after string) []string {
		var out []string
		for i, id := range sent {
			if i%20 == 0 && streams.CompareIDs(id, after) > 0 && streams.CompareIDs(id, first) >= 0 {
				out = append(out, id)
			}
		}
		return out
	}
	if s := subscribe(t, h, "alice", sent[0]); !s.Gap || !slices.Equal(ids(s.Replay), aliceAfter(sent[0])) {
		t.Fatalf("after a trimmed id: replay %v gap %v, want %v and a gap", ids(s.Replay), s.Gap, aliceAfter(sent[0]))
	}
	if s := subscribe(t, h, "alice", first); s.Gap || !slices.Equal(ids(s.Replay), aliceAfter(first)) {
		t.Fatalf("after the first kept id: replay %v gap %v, want %v and no gap", ids(s.Replay), s.Gap, aliceAfter(first))
	}
	if s := subscribe(t, h, "alice", ""); s.Gap || s.Replay != nil {
		t.Fatal("no after: a gap, or a replay")
	}
}

// TestRedisHubReplaysAtMostMaxLen: more of the user's events than the
// stream's maxLen is a gap; the newest are replayed.
func TestRedisHubReplaysAtMostMaxLen(t *testing.T) {
	h := replicas(t, 1, 3, 16)[0]
	var sent []string
	for i := range 5 { // too few to trim a block
		sent = append(sent, publish(t, h, "alice", fmt.Sprint(i)))
	}
	caughtUp(t, h)
	if s := subscribe(t, h, "alice", sent[0]); !s.Gap || !slices.Equal(ids(s.Replay), sent[2:]) {
		t.Fatalf("4 to replay: %v gap %v, want the newest 3 and a gap", ids(s.Replay), s.Gap)
	}
	if s := subscribe(t, h, "alice", sent[1]); s.Gap || !slices.Equal(ids(s.Replay), sent[2:]) {
		t.Fatalf("3 to replay: %v gap %v, want them and no gap", ids(s.Replay), s.Gap)
	}
}

func TestRedisHubTakesAnyLastEventID(t *testing.T) {
	h := replicas(t, 1, 100, 16)[0]
	x := publish(t, h, "alice", "x")
	caughtUp(t, h)
	for _, after := range garbage {
		s := subscribe(t, h, "alice", after)
		if !s.Gap || s.Replay != nil {
			t.Errorf("after %.30q: replay %v gap %v, want a gap and nothing replayed", after, ids(s.Replay), s.Gap)
		}
		s.Close()
	}
	// An id older than the stream: a gap, and all it keeps.
	if s := subscribe(t, h, "alice", "1-1"); !s.Gap || !slices.Equal(ids(s.Replay), []string{x}) {
		t.Errorf("after 1-1: replay %v gap %v, want %s and a gap", ids(s.Replay), s.Gap, x)
	}
}

func TestRedisHubRunEndsWithItsContext(t *testing.T) {
	h := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), 100, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- h.Run(ctx) }()
	go func() { done <- h.Run(ctx) }()
	select { // one of the two is the hub's loop; the other is refused
	case err := <-done:
		if err == nil {
			t.Fatal("a second Run on one hub: no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a second Run on one hub: not refused within 30 s (it runs)")
	}
	cancel()
	select { // Run ends after at most its current read (readBlock, 500 ms)
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not end within 30 s of its context's end")
	}
}

func TestRedisHubWithoutRedis(t *testing.T) {
	client, err := rueidis.NewClient(redistest.Option(t))
	if err != nil {
		t.Skip(err)
	}
	h := streams.NewRedisHub(client, redistest.Prefix(t), 100, 16)
	client.Close()
	if _, err := h.Publish(context.Background(), streams.Event{To: "alice"}); err == nil {
		t.Fatal("Publish without Redis: no error")
	}
	if _, err := h.Subscribe(context.Background(), "alice", ""); err == nil {
		t.Fatal("Subscribe without Redis: no error")
	}
	var failures atomic.Int32
	h.OnError = func(err error) {
		if err == nil {
			t.Error("OnError(nil)")
		}
		failures.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	for failures.Load() < 2 { // it retries
		select {
		case <-done:
			t.Fatal("Run gave up")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel() // while it waits to retry
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not end with its context")
	}
}

// proxiedHub returns a hub on its own client through a proxy the test
// cuts, on the stream of prefix, with its Run loop going until the test
// ends. Its failures are expected: Run reports them and retries.
func proxiedHub(t *testing.T, prefix string, maxLen int) (*streams.RedisHub, *testproxy.Proxy) {
	t.Helper()
	opt := redistest.Option(t)
	p := testproxy.New(t, opt.InitAddress[0])
	opt.InitAddress = []string{p.Addr()}
	opt.DisableRetry = true
	h := streams.NewRedisHub(redistest.Client(t, opt), prefix, maxLen, 64)
	t.Cleanup(p.Cut) // before the client closes, which would wait on a stalled proxy
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, p
}

// A publish lost in a cut leaves a gap marker in the user's stream once
// Redis is back: every replica's live subscriptions of that user receive
// it, with an id, and a subscriber resuming from before the cut replays
// it. Other users get nothing.
func TestRedisHubGapAfterLostPublish(t *testing.T) {
	prefix := redistest.Prefix(t)
	b := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, 1000, 64)
	run(t, b)
	a, p := proxiedHub(t, prefix, 1000)
	onA, onB, bob := subscribe(t, a, "alice", ""), subscribe(t, b, "alice", ""), subscribe(t, b, "bob", "")
	before := publish(t, a, "alice", "before")
	for _, s := range []*streams.Subscription{onA, onB} {
		receive(t, s, 1)
	}

	p.Cut()
	if _, err := a.Publish(context.Background(), streams.Event{Type: "apikey.created", To: "alice"}); err == nil {
		t.Fatal("Publish during a cut: no error")
	}
	p.Restore()
	var marker string
	for _, s := range []*streams.Subscription{onA, onB} {
		ev := receive(t, s, 1)[0]
		if ev.Type != streams.EventGap || ev.ID == "" || ev.To != "alice" {
			t.Fatalf("after the cut: %+v, want alice's gap marker, with an id", ev)
		}
		marker = ev.ID
	}
	caughtUp(t, b)
	r := subscribe(t, b, "alice", before)
	if got := ids(r.Replay); !slices.Equal(got, []string{marker}) {
		t.Fatalf("a resume from before the cut replays %v, want the gap marker %s", got, marker)
	}
	mine := publish(t, b, "bob", "bob's")
	if ev := receive(t, bob, 1)[0]; ev.ID != mine {
		t.Fatalf("bob got %+v, want his own event: alice's gap is not his", ev)
	}
}

// A replica whose reads failed while the stream was trimmed past what it
// had delivered gives each of its subscriptions a gap, without an id (it
// is its own, not the stream's), once it reads again. One whose reads
// failed but whose stream kept everything delivers what it missed, and
// no gap.
func TestRedisHubGapAfterEntriesTrimmedInACut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		published int // to bob, by the other replica, during the cut
		gap       bool
	}{
		{"kept", 3, false},
		{"trimmed", 600, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			const maxLen = 10 // trimmed in whole blocks of (by default) 100 entries
			b := streams.NewRedisHub(redistest.Client(t, redistest.Option(t)), prefix, maxLen, 64)
			run(t, b)
			a, p := proxiedHub(t, prefix, maxLen)
			alice := subscribe(t, a, "alice", "")
			publish(t, b, "alice", "before")
			receive(t, alice, 1)

			p.Cut()
			time.Sleep(100 * time.Millisecond) // a's Run fails a read
			for i := range tc.published {
				publish(t, b, "bob", fmt.Sprint(i))
			}
			p.Restore()
			next := publish(t, b, "alice", "after")
			ev := receive(t, alice, 1)[0]
			if gap := ev.Type == streams.EventGap; gap != tc.gap || (gap && ev.ID != "") {
				t.Fatalf("after the cut alice's subscription got %+v; want a gap without an id: %v", ev, tc.gap)
			}
			if tc.gap {
				ev = receive(t, alice, 1)[0]
			}
			if ev.ID != next {
				t.Fatalf("then %+v, want the event %s", ev, next)
			}
		})
	}
}

// At is where Run had read when a subscription began: a resume from it,
// on any replica, replays exactly the events that came live.
func TestRedisHubSubscriptionAt(t *testing.T) {
	hubs := replicas(t, 2, 1000, 16)
	a, b := hubs[0], hubs[1]
	publish(t, a, "alice", "a")
	caughtUp(t, a)
	s := subscribe(t, a, "alice", "")
	later := publish(t, a, "alice", "b")
	if ev := receive(t, s, 1)[0]; ev.ID != later || streams.CompareIDs(s.At, later) >= 0 {
		t.Fatalf("live %s after At %s; want %s, after At", ev.ID, s.At, later)
	}
	caughtUp(t, b)
	r := subscribe(t, b, "alice", s.At)
	if got := ids(r.Replay); !slices.Equal(got, []string{later}) || r.Gap {
		t.Fatalf("resumed from At %s: replay %v gap %v, want [%s]", s.At, got, r.Gap, later)
	}
	if streams.CompareIDs(r.At, later) < 0 {
		t.Fatalf("the resumed subscription's At %s is before what it replayed (%s)", r.At, later)
	}
}
