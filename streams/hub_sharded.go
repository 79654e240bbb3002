package streams

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// ShardedRedisHub is a [Hub] that spreads users over several [RedisHub]s,
// each its own Redis stream, so that on a Redis Cluster the events are
// not all written and read on the one master that holds one stream.
// Create it with [NewShardedRedisHub] and run its [ShardedRedisHub.Run]
// loop; it is safe for concurrent use.
//
// A user's events all go to one shard, chosen by a hash of the user, and
// its subscriptions read that shard alone; so an event id is a place in
// its user's shard, and a stream resumes from it on any replica as it
// does on one RedisHub. An event to every user (a gap marker) is written
// to every shard. Every replica must use the same prefix and number of
// shards: with another number a user's shard changes, and a stream that
// resumes across the change is told of a gap.
//
// The shards' keys carry hash tags chosen to fall in n equal ranges of
// the 16384 hash slots, so a cluster whose masters hold equal ranges (as
// redis-cli --cluster create makes them) holds the shards evenly. A hash
// tag in the prefix itself would put them all in its slot.
type ShardedRedisHub struct {
	// OnError, when set, is told each failure of a shard's reading, before
	// Run retries it. Set it before Run.
	OnError func(error)

	shards  []*RedisHub
	running atomic.Bool
}

// slots is the number of a Redis Cluster's hash slots.
const slots = 16384

// NewShardedRedisHub returns a hub of n shards on client's Redis. Each
// shard's stream keeps about maxLen events for replay, and each
// subscription buffers up to buffer events, as [NewRedisHub]'s. With n
// 1 it is one stream, "<prefix>events", the key a RedisHub uses; with
// more, each is "<prefix>events:{<tag>}". It panics unless n, maxLen and
// buffer are at least 1.
func NewShardedRedisHub(client rueidis.Client, prefix string, n, maxLen, buffer int) *ShardedRedisHub {
	if n < 1 {
		panic("streams: a sharded hub needs at least one shard")
	}
	h := &ShardedRedisHub{shards: make([]*RedisHub, n)}
	if n == 1 {
		h.shards[0] = NewRedisHub(client, prefix, maxLen, buffer)
		return h
	}
	for i, key := range shardKeys(client, prefix+"events", n) {
		h.shards[i] = NewRedisHub(client, prefix, maxLen, buffer)
		h.shards[i].key = key
	}
	return h
}

// shardKeys returns n keys "<base>:{<tag>}", the i-th in the i-th of n
// equal ranges of hash slots: the first tag, counting up from 0, whose
// slot falls in it. rueidis gives a key's slot, on a single node too.
func shardKeys(client rueidis.Client, base string, n int) []string {
	keys := make([]string, n)
	for i := range n {
		lo, hi := uint16(i*slots/n), uint16((i+1)*slots/n)
		for tag := 0; ; tag++ {
			key := base + ":{" + strconv.Itoa(tag) + "}"
			cmd := client.B().Get().Key(key).Build()
			if s := cmd.Slot() % slots; s >= lo && s < hi { // a single node's client marks the slot with a high bit
				keys[i] = key
				break
			}
		}
	}
	return keys
}

// shard returns the hub of user's events.
func (h *ShardedRedisHub) shard(user string) *RedisHub {
	if len(h.shards) == 1 {
		return h.shards[0]
	}
	f := fnv.New64a()
	f.Write([]byte(user))
	return h.shards[f.Sum64()%uint64(len(h.shards))]
}

// Publish adds ev to its user's shard and returns the id that shard gave
// it, as [RedisHub.Publish]. An event to every user is added to every
// shard, and its id is the last shard's; an error is the first shard's
// that failed, each of which tells its users of the gap once Redis
// answers.
func (h *ShardedRedisHub) Publish(ctx context.Context, ev Event) (string, error) {
	if ev.To != everyone {
		return h.shard(ev.To).Publish(ctx, ev)
	}
	ids, errs := make([]string, len(h.shards)), make([]error, len(h.shards))
	var wg sync.WaitGroup
	for i, s := range h.shards {
		wg.Go(func() { ids[i], errs[i] = s.Publish(ctx, ev) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", err
		}
	}
	return ids[len(ids)-1], nil
}

// Subscribe follows user's events on this replica, from user's shard, as
// [RedisHub.Subscribe].
func (h *ShardedRedisHub) Subscribe(ctx context.Context, user, after string) (*Subscription, error) {
	return h.shard(user).Subscribe(ctx, user, after)
}

// Run runs every shard's [RedisHub.Run] loop until ctx ends, and then
// returns nil. A second Run at once returns an error.
func (h *ShardedRedisHub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("streams: this ShardedRedisHub's Run is already running; run one loop per hub")
	}
	defer h.running.Store(false)
	for _, s := range h.shards {
		s.OnError = h.OnError
	}
	errs := make([]error, len(h.shards))
	var wg sync.WaitGroup
	for i, s := range h.shards {
		wg.Go(func() { errs[i] = s.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
