package bench_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
)

// BenchmarkRedisHub publishes events from 64 callers to 100 users whose
// streams are held on another replica, on one Redis (a RedisHub, as
// brain runs on a single Redis): the Redis CPU per event, and how long an
// event takes from just before its Publish to its arrival on the other
// replica (p50, p99).
//
//	cd bench && BRAIN_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench 'RedisHub$' -count 6 .
func BenchmarkRedisHub(b *testing.B) {
	prefix := redistest.Prefix(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := streams.NewRedisHub(redistest.Client(b, redistest.Option(b)), prefix, 10000, 1<<16)
	sub := streams.NewRedisHub(redistest.Client(b, redistest.Option(b)), prefix, 10000, 1<<16)
	go pub.Run(ctx)
	go sub.Run(ctx)
	const users = 100
	lat := make([]time.Duration, b.N)
	var got atomic.Int64
	for u := range users {
		s, err := sub.Subscribe(ctx, fmt.Sprint("user", u), "")
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		go func() {
			for ev := range s.Events() {
				d := time.Duration(time.Now().UnixNano() - int64(binary.LittleEndian.Uint64(ev.Data)))
				if i := got.Add(1) - 1; i < int64(len(lat)) {
					lat[i] = d
				}
			}
		}()
	}
	probe := redistest.Client(b, redistest.Option(b))
	before := redisCPU(b, probe)
	if failed := publishEvents(b, pub, users, func() []byte {
		return binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
	}); failed > 0 {
		b.Fatalf("%d publishes failed", failed)
	}
	cpu := redisCPU(b, probe) - before
	for deadline := time.Now().Add(10 * time.Second); got.Load() < int64(b.N) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := got.Load(); n != int64(b.N) {
		b.Fatalf("%d of %d events arrived", n, b.N)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// publishEvents is a benchmark's timed part: b.N events published to
// hub from 64 callers, each to one of users users at random ("user<n>"),
// with data made by data. It returns how many publishes failed.
func publishEvents(b *testing.B, hub streams.Hub, users int, data func() []byte) (failed int64) {
	var fails, seed atomic.Int64
	b.SetParallelism(32) // 64 callers on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(uint64(seed.Add(1)), 5))
		for pb.Next() {
			ev := streams.Event{Type: "job.progress", To: fmt.Sprint("user", rng.IntN(users)), Data: data()}
			if _, err := hub.Publish(context.Background(), ev); err != nil {
				fails.Add(1)
			}
		}
	})
	b.StopTimer()
	return fails.Load()
}
