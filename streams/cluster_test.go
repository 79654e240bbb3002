package streams_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
)

// On a Redis Cluster, two replicas share the stream cap for keys on every
// master, and deliver each other's events from shards spread over every
// master; after every master fails over to its replica, each user's
// stream resumes on the other replica with every event after its last,
// and new ones still arrive. A hub's read may time out while the masters
// fail over (on a loaded machine a failover outlasts a read): that is
// reported, and the events must still arrive.
func TestRedisCluster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	prefix := redistest.Prefix(t)
	const max = 2
	var failingOver atomic.Bool
	var caps []*streams.RedisCap
	var hubs []*streams.ShardedRedisHub
	for range 2 {
		c := streams.NewRedisCap(redistest.Client(t, cluster.Option()), prefix, max, time.Minute, streams.NewMemoryCap(max))
		c.Timeout = 5 * time.Second
		c.OnError = func(err error) { t.Errorf("cap: %v", err) }
		caps = append(caps, c)
		h := streams.NewShardedRedisHub(redistest.Client(t, cluster.Option()), prefix, 16, 1000, 64)
		h.OnError = func(err error) {
			if !failingOver.Load() {
				t.Errorf("Run: %v", err)
			}
		}
		runLoop(t, h.Run)
		hubs = append(hubs, h)
	}
	ctx := context.Background()
	for u := range 12 { // keys spread over the masters
		key := fmt.Sprint("user", u)
		for i := range max + 1 {
			_, live, ok, err := caps[i%2].Reserve(ctx, key)
			if err != nil || ok != (i < max) || live != min(i+1, max) {
				t.Fatalf("%s: reserve %d on replica %d: live %d, ok %v, %v", key, i+1, i%2, live, ok, err)
			}
		}
	}

	const users = 48
	subs := make([]*streams.Subscription, users)
	sent := make([][]string, users)
	for u := range users {
		subs[u] = subscribe(t, hubs[1], fmt.Sprint("user", u), "")
	}
	for i := range 3 {
		for u := range users {
			sent[u] = append(sent[u], publish(t, hubs[0], fmt.Sprint("user", u), fmt.Sprint(i)))
		}
	}
	last := make([]string, users)
	for u, s := range subs {
		got := ids(receive(t, s, 3))
		if !slices.Equal(got, sent[u]) {
			t.Fatalf("user%d got %v, want %v", u, got, sent[u])
		}
		last[u] = got[2]
		s.Close()
	}
	for i, key := range append(hubs[0].Keys(), "somekey", "a{}b", "{user1}x", "x{y", "}{z}", fmt.Sprint(prefix, "rl:", 42)) {
		want := strings.TrimSpace(cluster.Do(cluster.Addrs[0], "CLUSTER KEYSLOT "+key))
		if got := fmt.Sprint(streams.KeySlot(key)); got != want {
			t.Fatalf("slot of %q: %s, Redis says %s", key, got, want)
		}
		if i < 16 && int(streams.KeySlot(key))*16/16384 != i {
			t.Fatalf("shard %d's key %s is in slot %d, not in the shard's sixteenth of the slots", i, key, streams.KeySlot(key))
		}
	}
	for _, m := range cluster.Masters() { // each master holds some of the shards
		if keys := strings.Fields(cluster.Do(m, "KEYS "+prefix+"events:*")); len(keys) < 2 {
			t.Fatalf("master %s holds the event shards %v: want them spread over every master", m, keys)
		}
	}
	failingOver.Store(true)
	for _, m := range cluster.Masters() {
		cluster.Failover(m) // every shard's master among them
	}
	failed := 0
	deadline := time.Now().Add(20 * time.Second)
	for u := range users {
		for {
			id, err := hubs[0].Publish(ctx, streams.Event{Type: "after", To: fmt.Sprint("user", u)})
			if err == nil {
				sent[u] = append(sent[u], id)
				break
			}
			failed++ // told to the publisher, and a gap marker tells the subscribers
			if time.Now().After(deadline) {
				t.Fatalf("publishing still fails 20 s after the failover: %v", err)
			}
		}
	}
	for u := range users {
		user := fmt.Sprint("user", u)
		r := subscribe(t, hubs[1], user, last[u])
		got := r.Replay // what hubs[1]'s Run has not read yet comes live
		for {
			if failed > 0 { // a failed publish leaves its user a gap marker
				got = slices.DeleteFunc(got, func(ev streams.Event) bool { return ev.Type == streams.EventGap })
			}
			if len(got) > 0 {
				break
			}
			got = append(got, receive(t, r, 1)...)
		}
		if !slices.Equal(ids(got), sent[u][3:]) || r.Gap && failed == 0 {
			t.Fatalf("%s resumed after %s: %v (gap %v, %d publishes failed), want %v", user, last[u], ids(got), r.Gap, failed, sent[u][3:])
		}
		next := publish(t, hubs[0], user, "next")
		if ev := receive(t, r, 1)[0]; ev.ID != next {
			t.Fatalf("%s then got %s, want %s", user, ev.ID, next)
		}
	}
	for u := range 12 { // the cap's sets came through the failover
		if _, live, ok, err := caps[0].Reserve(ctx, fmt.Sprint("user", u)); ok || err != nil || live != max {
			t.Fatalf("user%d after the failover: live %d, ok %v, %v; want refused at %d", u, live, ok, err, max)
		}
	}
}
