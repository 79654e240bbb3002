package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/streams"
)

var t0 = time.UnixMilli(1_800_000_000_000)

// newMemoryHub returns a hub whose ids come from a fake clock at t0.
func newMemoryHub(replay, buffer int) (*streams.MemoryHub, *testclock.Clock) {
	clk := testclock.New(t0)
	h := streams.NewMemoryHub(replay, buffer)
	h.Now = clk.Now
	return h, clk
}

func publish(t testing.TB, h streams.Hub, to, typ string) string {
	t.Helper()
	id, err := h.Publish(context.Background(), streams.Event{Type: typ, To: to, Data: json.RawMessage(`{"n":"` + typ + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func subscribe(t testing.TB, h streams.Hub, user, after string) *streams.Subscription {
	t.Helper()
	s, err := h.Subscribe(context.Background(), user, after)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// buffered returns the events s holds now, without waiting: a memory hub
// has delivered an event by the time Publish returns.
func buffered(s *streams.Subscription) []streams.Event {
	var out []streams.Event
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return out
			}
			out = append(out, *ev)
		default:
			return out
		}
	}
}

// drain receives what s holds, keeping nothing.
func drain(s *streams.Subscription) {
	for {
		select {
		case <-s.Events():
		default:
			return
		}
	}
}

func ids(evs []streams.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func TestMemoryHubDeliversEachEventToItsUserOnly(t *testing.T) {
	h, _ := newMemoryHub(100, 16)
	alice1 := subscribe(t, h, "alice", "")
	alice2 := subscribe(t, h, "alice", "")
	bob := subscribe(t, h, "bob", "")

	a := publish(t, h, "alice", "a")
	b := publish(t, h, "bob", "b")
	publish(t, h, "carol", "c") // nobody follows carol

	for _, s := range []*streams.Subscription{alice1, alice2} {
		got := buffered(s)
		if len(got) != 1 || got[0].ID != a || got[0].Type != "a" || got[0].To != "alice" || string(got[0].Data) != `{"n":"a"}` {
			t.Fatalf("alice got %+v, want only event %s", got, a)
		}
	}
	if got := buffered(bob); len(got) != 1 || got[0].ID != b {
		t.Fatalf("bob got %+v, want only event %s", got, b)
	}
}

func TestMemoryHubReplaysTheLaterEventsOfItsUser(t *testing.T) {
	h, clk := newMemoryHub(100, 16)
	var all []string
	for i := range 6 {
		all = append(all, publish(t, h, []string{"alice", "bob"}[i%2], fmt.Sprint(i)))
		clk.Advance(time.Millisecond)
	}
	// alice's events are 0, 2 and 4.
	for after, want := range map[string][]string{
		"":     nil, // no after: live events only
		all[0]: {all[2], all[4]},
		all[1]: {all[2], all[4]}, // after one of bob's
		all[3]: {all[4]},
		all[4]: nil,
		all[5]: nil, // the newest
	} {
		s := subscribe(t, h, "alice", after)
		if got := ids(s.Replay); !slices.Equal(got, want) || s.Gap {
			t.Errorf("after %q: replay %v gap %v, want %v and no gap", after, got, s.Gap, want)
		}
		for _, ev := range s.Replay {
			if ev.To != "alice" || ev.Type == "" || ev.Data == nil {
				t.Errorf("after %q: replayed %+v", after, ev)
			}
		}
	}
}

func TestMemoryHubGap(t *testing.T) {
	h, _ := newMemoryHub(3, 16)
	var all []string
	for i := range 5 {
		all = append(all, publish(t, h, "alice", fmt.Sprint(i)))
	}
	// The ring keeps 2, 3 and 4: 0 and 1 were dropped.
	for _, c := range []struct {
		after  string
		replay []string
		gap    bool
	}{
		{all[0], all[2:], true},  // 1 was dropped
		{all[1], all[2:], false}, // everything after 1 is kept
		{all[3], all[4:], false},
		{"", nil, false},
	} {
		s := subscribe(t, h, "alice", c.after)
		if got := ids(s.Replay); !slices.Equal(got, c.replay) || s.Gap != c.gap {
			t.Errorf("after %q: replay %v gap %v, want %v gap %v", c.after, got, s.Gap, c.replay, c.gap)
		}
	}

	// Nothing dropped: no gap after the first event, even with a ring that
	// is full.
	h, _ = newMemoryHub(3, 16)
	first := publish(t, h, "alice", "0")
	publish(t, h, "alice", "1")
	publish(t, h, "alice", "2")
	if s := subscribe(t, h, "alice", first); s.Gap || len(s.Replay) != 2 {
		t.Errorf("after the first of 3 kept events: replay %v gap %v, want 2 events, no gap", ids(s.Replay), s.Gap)
	}
	// An id the hub cannot have given: older than its first event (another
	// process's), or newer than its newest.
	for _, after := range []string{fmt.Sprintf("%d-0", t0.UnixMilli()-1), fmt.Sprintf("%d-0", t0.UnixMilli()+1)} {
		if s := subscribe(t, h, "alice", after); !s.Gap {
			t.Errorf("after %q, not an id of this hub: no gap", after)
		}
	}
	// A hub that gave no id yet cannot place any after.
	h, _ = newMemoryHub(3, 16)
	if s := subscribe(t, h, "alice", first); !s.Gap || s.Replay != nil {
		t.Errorf("new hub: replay %v gap %v, want a gap", ids(s.Replay), s.Gap)
	}
	// A hub that keeps nothing still knows what it dropped.
	h, _ = newMemoryHub(0, 16)
	a := publish(t, h, "alice", "0")
	b := publish(t, h, "alice", "1")
	if s := subscribe(t, h, "alice", a); !s.Gap {
		t.Error("replay 0: no gap after a dropped event")
	}
	if s := subscribe(t, h, "alice", b); s.Gap {
		t.Error("replay 0: a gap after the newest event")
	}
}

// TestMemoryHubSubscribeRacesPublish subscribes while others publish: each
// subscriber gets every event after its after exactly once, in order,
// from Replay then Events.
func TestMemoryHubSubscribeRacesPublish(t *testing.T) {
	const publishers, each, subscribers = 4, 200, 16
	h := streams.NewMemoryHub(publishers*each, publishers*each)
	var (
		mu        sync.Mutex
		published []string
		wg        sync.WaitGroup
	)
	latest := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(published) == 0 {
			return ""
		}
		return published[len(published)/2] // an id from the middle: some to replay
	}
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				id := publish(t, h, "alice", fmt.Sprint(p, i))
				mu.Lock()
				published = append(published, id)
				mu.Unlock()
			}
		})
	}
	subs := make([]*streams.Subscription, subscribers)
	afters := make([]string, subscribers)
	var sw sync.WaitGroup
	for i := range subscribers {
		sw.Go(func() {
			for range i * 10 { // subscribe at different moments
				latest()
			}
			afters[i] = latest()
			subs[i] = subscribe(t, h, "alice", afters[i])
		})
	}
	wg.Wait()
	sw.Wait()
	slices.SortFunc(published, streams.CompareIDs)
	for i, s := range subs {
		var want []string
		for _, id := range published {
			if afters[i] == "" || streams.CompareIDs(id, afters[i]) > 0 {
				want = append(want, id)
			}
		}
		got := append(ids(s.Replay), ids(buffered(s))...)
		if afters[i] == "" { // no after: live events only, the newest ones
			want = want[len(want)-len(got):]
		}
		if !slices.Equal(got, want) || s.Gap || s.Err() != nil {
			t.Fatalf("subscriber %d after %q: got %d events, want %d (gap %v, err %v)", i, afters[i], len(got), len(want), s.Gap, s.Err())
		}
	}
}

// TestMemoryHubEndsASlowSubscriber: a subscriber that does not read is
// ended once its buffer is full; Publish never waits for it, and the
// others receive everything.
func TestMemoryHubEndsASlowSubscriber(t *testing.T) {
	const buffer, n = 4, 100
	h, _ := newMemoryHub(10, buffer)
	stalled := subscribe(t, h, "alice", "")
	fast := subscribe(t, h, "alice", "")
	var got, want []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			want = append(want, publish(t, h, "alice", fmt.Sprint(i)))
			got = append(got, ids(buffered(fast))...)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish waited for a subscriber")
	}
	if !slices.Equal(got, want) || fast.Err() != nil {
		t.Fatalf("fast subscriber: %d of %d events, err %v", len(got), n, fast.Err())
	}
	if stalled.Err() != streams.ErrSlow {
		t.Fatalf("stalled subscriber: err %v, want ErrSlow", stalled.Err())
	}
	// What was buffered is still read, then Events is closed.
	if rest := ids(buffered(stalled)); !slices.Equal(rest, want[:buffer]) {
		t.Fatalf("stalled subscriber read %v, want the first %d events", rest, buffer)
	}
	if _, ok := <-stalled.Events(); ok {
		t.Fatal("Events of an ended subscription is open")
	}
	stalled.Close() // after the hub ended it: nothing to do, nothing breaks
	if stalled.Err() != streams.ErrSlow {
		t.Fatalf("Close changed Err to %v", stalled.Err())
	}
	publish(t, h, "alice", "after") // the fan-out no longer holds it
}

func TestMemoryHubClose(t *testing.T) {
	h, _ := newMemoryHub(10, 4)
	s := subscribe(t, h, "alice", "")
	other := subscribe(t, h, "alice", "")
	s.Close()
	s.Close()
	if _, ok := <-s.Events(); ok || s.Err() != nil {
		t.Fatalf("closed subscription: Events open %v, Err %v", ok, s.Err())
	}
	id := publish(t, h, "alice", "x") // no send on the closed channel
	if got := ids(buffered(other)); !slices.Equal(got, []string{id}) {
		t.Fatalf("the other subscription got %v", got)
	}

	// Close races Publish: no send on a closed channel, no deadlock.
	var wg sync.WaitGroup
	for range 50 {
		s := subscribe(t, h, "alice", "")
		wg.Go(func() { publish(t, h, "alice", "y") })
		wg.Go(s.Close)
	}
	wg.Wait()
}

func TestMemoryHubIDsIncreaseWhateverTheClock(t *testing.T) {
	h, clk := newMemoryHub(10, 4)
	ms := t0.UnixMilli()
	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, fmt.Sprintf("%d-0", ms)},
		{0, fmt.Sprintf("%d-1", ms)},                      // same millisecond
		{-time.Second, fmt.Sprintf("%d-2", ms)},           // the clock went back
		{time.Second, fmt.Sprintf("%d-3", ms)},            // back to where it was
		{5 * time.Millisecond, fmt.Sprintf("%d-0", ms+5)}, // forward
		{-time.Hour, fmt.Sprintf("%d-1", ms+5)},
	}
	prev := ""
	for _, st := range steps {
		clk.Advance(st.advance)
		id := publish(t, h, "alice", "x")
		if id != st.want || (prev != "" && streams.CompareIDs(id, prev) <= 0) {
			t.Fatalf("id %s after %s, want %s", id, prev, st.want)
		}
		prev = id
	}

	// The clock's zero gives 1, not 0-0 (no id in Redis).
	h = streams.NewMemoryHub(1, 1)
	h.Now = func() time.Time { return time.UnixMilli(0) }
	if id := publish(t, h, "alice", "x"); id != "0-1" {
		t.Fatalf("first id at the epoch: %s", id)
	}
}

// garbage are Last-Event-ID values a client may send.
var garbage = []string{
	"-", "1-", "-1", "1", "01-1", "1-01", "+1-1", "1-+1", "1-1-1", " 1-1", "1-1 ", "1_0-1",
	"0x1-1", "１-1", "18446744073709551616-0", "1-18446744073709551616",
	strings.Repeat("9", 21) + "-0", strings.Repeat("1", 1<<16), "\x00-\x00", "null",
}

func TestMemoryHubTakesAnyLastEventID(t *testing.T) {
	h, _ := newMemoryHub(10, 4)
	publish(t, h, "alice", "x")
	for _, after := range garbage {
		s := subscribe(t, h, "alice", after)
		if !s.Gap || s.Replay != nil {
			t.Errorf("after %.30q: replay %v gap %v, want a gap and nothing replayed", after, ids(s.Replay), s.Gap)
		}
		id := publish(t, h, "alice", "live")
		if got := ids(buffered(s)); !slices.Equal(got, []string{id}) {
			t.Errorf("after %.30q: live events %v", after, got)
		}
	}
}

// BenchmarkMemoryHubPublish publishes to a user followed by n streams,
// each of which reads what it is sent.
func BenchmarkMemoryHubPublish(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprint(n, "-subscribers"), func(b *testing.B) {
			h := streams.NewMemoryHub(1024, 1024)
			subs := make([]*streams.Subscription, n)
			for i := range subs {
				subs[i] = subscribe(b, h, "alice", "")
			}
			ev := streams.Event{Type: "apikey.created", To: "alice", Data: json.RawMessage(`{"id":"k1"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := h.Publish(ctx, ev); err != nil {
					b.Fatal(err)
				}
				if i++; i%512 == 0 {
					for _, s := range subs {
						drain(s)
					}
				}
			}
			for _, s := range subs {
				if s.Err() != nil {
					b.Fatal(s.Err())
				}
			}
		})
	}
}

// At is the hub's place when a subscription began: the newest event then,
// so a resume from it replays exactly the events that came live.
func TestMemoryHubSubscriptionAt(t *testing.T) {
	h, clk := newMemoryHub(100, 16)
	if s := subscribe(t, h, "alice", ""); s.At != "0-0" {
		t.Fatalf("At of an empty hub = %q, want 0-0", s.At)
	}
	publish(t, h, "alice", "a")
	clk.Advance(time.Millisecond)
	newest := publish(t, h, "bob", "b")
	s := subscribe(t, h, "alice", "")
	if s.At != newest {
		t.Fatalf("At = %q, want the newest event %s", s.At, newest)
	}
	clk.Advance(time.Millisecond)
	later := publish(t, h, "alice", "c")
	r := subscribe(t, h, "alice", s.At)
	if got := ids(r.Replay); !slices.Equal(got, []string{later}) || r.Gap || r.At != later {
		t.Fatalf("resumed from At: replay %v gap %v at %s, want [%s], no gap, at %s", got, r.Gap, r.At, later, later)
	}
}
