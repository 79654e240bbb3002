package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
)

// BenchmarkRedisClusterEvents publishes events to 1,000 users from 64
// callers on a Redis Cluster of three masters (each with a replica),
// with two replicas' hubs reading them, over 1, 3, 6 and 16 shards: the
// Redis tier's CPU per event, and the busiest node's, which bounds the
// events a cluster carries. With one stream the busiest node does nearly
// all of it; over shards, less, though the tier as a whole does more.
//
//	cd bench && go test -run '^$' -bench RedisClusterEvents -count 6 .
func BenchmarkRedisClusterEvents(b *testing.B) {
	cluster := redistest.StartCluster(b)
	for _, shards := range []int{1, 3, 6, 16} {
		b.Run(fmt.Sprint("shards=", shards), func(b *testing.B) {
			prefix := redistest.Prefix(b)
			var pub *streams.ShardedRedisHub
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range 2 { // two replicas, each reading every shard
				h := streams.NewShardedRedisHub(redistest.Client(b, cluster.Option()), prefix, shards, 10000, 64)
				go h.Run(ctx)
				if i == 0 {
					pub = h
				}
			}
			before := clusterCPU(b, cluster)
			if failed := publishEvents(b, pub, 1000, func() []byte { return []byte(`{"job_id":"j","items_done":1}`) }); failed > 0 {
				b.Fatalf("%d publishes failed", failed)
			}
			after := clusterCPU(b, cluster)
			var total, busiest time.Duration
			for addr, d := range after {
				used := d - before[addr]
				total += used
				busiest = max(busiest, used)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "redis-cpu-µs/op")
			b.ReportMetric(float64(busiest.Microseconds())/float64(b.N), "busiest-node-µs/op")
		})
	}
}

// clusterCPU is the CPU time each of cluster's nodes, masters and
// replicas, has used so far, by address.
func clusterCPU(b *testing.B, cluster *redistest.Cluster) map[string]time.Duration {
	b.Helper()
	cpu := map[string]time.Duration{}
	for _, a := range cluster.Addrs {
		cpu[a] = processCPU(b, cluster.Do(a, "INFO server"))
	}
	return cpu
}
