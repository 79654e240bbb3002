package streams_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
	"github.com/redis/rueidis"
)

// sharded returns a hub of shards streams under prefix, on its own client
// as a replica's is, with its Run loop going until the test ends.
func sharded(t *testing.T, opt rueidis.ClientOption, prefix string, shards int) *streams.ShardedRedisHub {
	t.Helper()
	h := streams.NewShardedRedisHub(redistest.Client(t, opt), prefix, shards, 1000, 64)
	h.OnError = func(err error) { t.Errorf("Run: %v", err) }
	runLoop(t, h.Run)
	return h
}

// Two replicas of four shards: every shard carries some users, each
// user's events reach its streams on the other replica and no one
// else's, an event to every user reaches each stream once, and a stream
// resumes on either replica from an id of its user's shard.
func TestShardedRedisHub(t *testing.T) {
	prefix := redistest.Prefix(t)
	a := sharded(t, redistest.Option(t), prefix, 4)
	b := sharded(t, redistest.Option(t), prefix, 4)
	if !slices.Equal(a.Keys(), b.Keys()) || len(a.Keys()) != 4 || len(slices.Compact(slices.Sorted(slices.Values(a.Keys())))) != 4 {
		t.Fatalf("keys %v and %v, want the same 4 on both replicas", a.Keys(), b.Keys())
	}
	const users = 16
	subs := make([]*streams.Subscription, users)
	for u := range users {
		subs[u] = subscribe(t, b, fmt.Sprint("user", u), "")
	}
	sent := make([][]string, users)
	for i := range 3 {
		for u := range users {
			sent[u] = append(sent[u], publish(t, a, fmt.Sprint("user", u), fmt.Sprint(i)))
		}
	}
	for u, s := range subs {
		if got := ids(receive(t, s, 3)); !slices.Equal(got, sent[u]) {
			t.Fatalf("user%d got %v, want its own %v", u, got, sent[u])
		}
	}
	raw := redistest.Client(t, redistest.Option(t))
	total := int64(0)
	for _, key := range a.Keys() {
		n, err := raw.Do(context.Background(), raw.B().Xlen().Key(key).Build()).AsInt64()
		if err != nil || n == 0 {
			t.Fatalf("shard %s holds %d events (%v): every shard should carry some of %d users", key, n, err, users)
		}
		total += n
	}
	if total != 3*users {
		t.Fatalf("the shards hold %d events, want each of %d once", total, 3*users)
	}

	// One event to every user: each stream gets it once, then its own next.
	if _, err := a.Publish(context.Background(), streams.Event{Type: streams.EventGap, To: streams.Everyone}); err != nil {
		t.Fatal(err)
	}
	next := make([]string, users)
	for u := range users {
		next[u] = publish(t, a, fmt.Sprint("user", u), "next")
	}
	for u, s := range subs {
		got := receive(t, s, 2)
		if got[0].Type != streams.EventGap || got[1].ID != next[u] {
			t.Fatalf("user%d got %v then %s, want one %s then %s", u, got[0].Type, got[1].ID, streams.EventGap, next[u])
		}
	}

	// user0 drops after its first event and resumes on a: the rest, once.
	subs[0].Close()
	later := publish(t, b, "user0", "later")
	r := subscribe(t, a, "user0", sent[0][0])
	got := r.Replay // a's Run may not have read the newest yet: those come live
	got = append(got, receive(t, r, 5-len(got))...)
	wantIDs := []string{sent[0][1], sent[0][2], got[2].ID, next[0], later}
	if !slices.Equal(ids(got), wantIDs) || got[2].Type != streams.EventGap || r.Gap {
		t.Fatalf("user0 resumed after %s: %v, the third a %s (gap %v); want %v with the event to every user third",
			sent[0][0], ids(got), got[2].Type, r.Gap, wantIDs)
	}
}

// Replicas must spread events over the same number of shards: the first
// claims its number in Redis, and one with another is refused, naming
// both and the key to delete to change it.
func TestShardedRedisHubClaim(t *testing.T) {
	prefix := redistest.Prefix(t)
	client := redistest.Client(t, redistest.Option(t))
	ctx := context.Background()
	for _, n := range []int{4, 4} {
		if err := streams.NewShardedRedisHub(client, prefix, n, 100, 16).Claim(ctx); err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
	}
	err := streams.NewShardedRedisHub(client, prefix, 2, 100, 16).Claim(ctx)
	if err == nil || !strings.Contains(err.Error(), "over 4 shards") || !strings.Contains(err.Error(), "this one over 2") || !strings.Contains(err.Error(), prefix+"events:shards") {
		t.Fatalf("2 shards where replicas use 4: %v; want refused, naming both and the key", err)
	}
	if err := streams.NewShardedRedisHub(client, redistest.Prefix(t), 1, 100, 16).Claim(ctx); err != nil {
		t.Fatalf("one shard claims nothing: %v", err)
	}
}

// A stream that resumes with an id from another number of shards is told
// of a gap, whichever user: the keys name the number, so the new streams
// (begun once every replica has the new number) hold only later events.
func TestShardedRedisHubCountChangeIsAGap(t *testing.T) {
	prefix := redistest.Prefix(t)
	before := sharded(t, redistest.Option(t), prefix, 2)
	last := make([]string, 16)
	for u := range last {
		publish(t, before, fmt.Sprint("user", u), "old")
		last[u] = publish(t, before, fmt.Sprint("user", u), "old")
	}
	after := sharded(t, redistest.Option(t), prefix, 4)
	for u := range last {
		publish(t, after, fmt.Sprint("user", u), "new")
	}
	for u, id := range last {
		user := fmt.Sprint("user", u)
		s := subscribe(t, after, user, id)
		got := s.Replay // what after's Run has not read yet comes live
		got = append(got, receive(t, s, 1-len(got))...)
		if !s.Gap || len(got) != 1 || got[0].Type != "new" {
			t.Fatalf("%s resumed on 4 shards from an id of 2: gap %v, then %v; want a gap and its new event", user, s.Gap, got)
		}
	}
}

func TestShardedRedisHubRefusesAHashTaggedPrefix(t *testing.T) {
	client := redistest.Client(t, redistest.Option(t))
	defer func() {
		if recover() == nil {
			t.Fatal("4 shards under the prefix {brain}: did not panic; every shard would share one slot")
		}
	}()
	streams.NewShardedRedisHub(client, "{brain}:", 4, 100, 16)
}
