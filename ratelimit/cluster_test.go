package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
)

// On a Redis Cluster, where one script's keys must share a hash slot, two
// replicas' limiters sharing a budget admit exactly its burst for each of
// many keys spread over every master, batched concurrently; while slots
// move between masters they decide as exactly, and a key's state moves
// with its slot; after a master fails over to its replica they decide
// again, as exactly.
func TestRedisCluster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	pfx := redistest.Prefix(t)
	b := budget("p", lim("hourly", 5, time.Hour, 5))
	replicas := []*ratelimit.Redis{
		ratelimit.NewRedis(redistest.Client(t, cluster.Option()), pfx, b),
		ratelimit.NewRedis(redistest.Client(t, cluster.Option()), pfx, b),
	}
	flood := func(round string) (passed map[string]int, errs int) {
		var mu sync.Mutex
		passed = map[string]int{}
		var wg sync.WaitGroup
		for g := range 48 {
			wg.Go(func() {
				for i := range 40 { // 1,920 requests: 30 for each of 64 keys
					key := fmt.Sprint(round, "-k", (g+i)%64)
					d, err := replicas[g%2].Allow(context.Background(), key)
					mu.Lock()
					if err != nil {
						errs++
					} else if d.Allowed {
						passed[key]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return passed, errs
	}
	check := func(round string, passed map[string]int) {
		t.Helper()
		for k := range 64 {
			if n := passed[fmt.Sprint(round, "-k", k)]; n != 5 {
				t.Errorf("%s: key k%d: %d passed, want exactly the burst, 5", round, k, n)
			}
		}
	}
	passed, errs := flood("before")
	if errs != 0 {
		t.Fatalf("%d decisions failed on a healthy cluster", errs)
	}
	check("before", passed)
	requests, _ := replicas[0].Stats()
	if requests == 0 {
		t.Fatal("no decision reached Redis")
	}

	// A slot migration under load: 2,000 slots, and the keys the first
	// round left in them, move between masters while the replicas decide.
	masters := cluster.Masters()
	moved := make(chan struct{})
	go func() { defer close(moved); cluster.Reshard(masters[1], masters[2], 2000) }()
	var migrating []string
	for round := 0; ; round++ {
		select {
		case <-moved:
		default:
			r := fmt.Sprint("migrating", round)
			passed, errs := flood(r)
			if errs > 0 {
				t.Errorf("%s: %d decisions failed while slots moved", r, errs)
			}
			migrating = append(migrating, r)
			check(r, passed)
			continue
		}
		break
	}
	t.Logf("%d rounds of 1,920 decisions while 2,000 slots moved", len(migrating))
	passed, _ = flood("before") // the first round's keys, in their new places: spent
	for k := range 64 {
		if n := passed[fmt.Sprint("before-k", k)]; n != 0 {
			t.Errorf("key before-k%d admitted %d more after its slot moved, want 0: its state moved with it", k, n)
		}
	}

	cluster.Failover(cluster.Masters()[0])
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, errs = flood(fmt.Sprint("probe", time.Now().UnixNano()))
		if errs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d decisions still fail 20 s after the failover", errs)
		}
	}
	passed, errs = flood("after")
	if errs != 0 {
		t.Fatalf("%d decisions failed after the failover", errs)
	}
	check("after", passed)
}
