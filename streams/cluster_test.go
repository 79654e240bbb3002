package streams_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
)

// On a Redis Cluster, two replicas share the stream cap for keys on every
// master, and deliver each other's events; after the master holding the
// event stream fails over to its replica, a stream resumes on the other
// replica with every event after its last, and new ones still arrive.
func TestRedisCluster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	prefix := redistest.Prefix()
	const max = 2
	var caps []*streams.RedisCap
	var hubs []*streams.RedisHub
	for range 2 {
		c := streams.NewRedisCap(redistest.Client(t, cluster.Option()), prefix, max, time.Minute, streams.NewMemoryCap(max))
		c.Timeout = 5 * time.Second
		c.OnError = func(err error) { t.Errorf("cap: %v", err) }
		caps = append(caps, c)
		h := streams.NewRedisHub(redistest.Client(t, cluster.Option()), prefix, 1000, 64)
		run(t, h)
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

	s := subscribe(t, hubs[1], "alice", "")
	var sent []string
	for i := range 3 {
		sent = append(sent, publish(t, hubs[0], "alice", fmt.Sprint(i)))
	}
	last := receive(t, s, 3)[2].ID
	s.Close()
	for _, m := range cluster.Masters() {
		cluster.Failover(m) // the stream's master among them
	}
	failed := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		id, err := hubs[0].Publish(ctx, streams.Event{Type: "after", To: "alice"})
		if err == nil {
			sent = append(sent, id)
			break
		}
		failed++ // told to the publisher, and a gap marker tells the subscribers
		if time.Now().After(deadline) {
			t.Fatalf("publishing still fails 20 s after the failover: %v", err)
		}
	}
	caughtUp(t, hubs[1])
	r := subscribe(t, hubs[1], "alice", last)
	got := ids(r.Replay)
	if !slices.Equal(got, sent[3:]) || r.Gap && failed == 0 {
		t.Fatalf("resumed after %s: %v (gap %v, %d publishes failed), want %v", last, got, r.Gap, failed, sent[3:])
	}
	next := publish(t, hubs[1], "alice", "next")
	if ev := receive(t, r, 1)[0]; ev.ID != next {
		t.Fatalf("then got %s, want %s", ev.ID, next)
	}
	for u := range 12 { // the cap's sets came through the failover
		if _, live, ok, err := caps[0].Reserve(ctx, fmt.Sprint("user", u)); ok || err != nil || live != max {
			t.Fatalf("user%d after the failover: live %d, ok %v, %v; want refused at %d", u, live, ok, err, max)
		}
	}
}
