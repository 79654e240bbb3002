package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// ShardedRedisHub is a [Hub] that spreads users over several [RedisHub]s,
// each its own Redis stream, so a Redis Cluster's masters share the events
// (BENCHMARKS.md). Make it with [NewShardedRedisHub], [ShardedRedisHub.Claim]
// its shards and run its [ShardedRedisHub.Run]. A user's events go to the
// shard a hash of the user picks; an event to every user goes to all.
type ShardedRedisHub struct {
	OnError func(error) // when set, told each failure of a shard's reading

	client  rueidis.Client
	claim   string // the key that holds the number of shards
	shards  []*RedisHub
	running atomic.Bool
}

const slots = 16384 // a Redis Cluster's hash slots

// MaxShards is the most shards a [ShardedRedisHub] may have.
const MaxShards = 1024

// NewShardedRedisHub returns a hub of n shards, each like [NewRedisHub]'s,
// keyed "<prefix>events:<n>:{<tag>}" ("<prefix>events" for one). It panics
// unless n is from 1 to [MaxShards] and, for more than one, prefix has no
// hash tag.
func NewShardedRedisHub(client rueidis.Client, prefix string, n, maxLen, buffer int) *ShardedRedisHub {
	if n < 1 || n > MaxShards {
		panic("streams: a sharded hub has from 1 to " + strconv.Itoa(MaxShards) + " shards")
	}
	if n > 1 && HasHashTag(prefix) {
		panic("streams: the prefix " + strconv.Quote(prefix) + " has a hash tag, which would put every shard in one slot")
	}
	h := &ShardedRedisHub{client: client, claim: prefix + "events:shards", shards: make([]*RedisHub, n)}
	keys := []string{prefix + "events"}
	if n > 1 {
		keys = shardKeys(prefix+"events:"+strconv.Itoa(n), n)
	}
	for i, key := range keys {
		h.shards[i] = NewRedisHub(client, prefix, maxLen, buffer)
		h.shards[i].key = key
	}
	return h
}

// HasHashTag reports whether prefix holds a Redis hash tag, which picks a
// key's slot: a "{" with a "}" after it, not at once.
func HasHashTag(prefix string) bool {
	_, after, ok := strings.Cut(prefix, "{")
	return ok && strings.IndexByte(after, '}') > 0
}

// keySlot is key's hash slot in a Redis Cluster, as rueidis routes it.
func keySlot(key string) uint16 {
	c := rueidis.Completed{}.SetSlot(key)
	return c.Slot()
}

// shardKeys returns n keys "<base>:{<tag>}", the i-th with the first tag
// whose slot falls in the i-th of n equal ranges of slots.
func shardKeys(base string, n int) []string {
	keys := make([]string, n)
	for i := range n {
		lo, hi := uint16(i*slots/n), uint16((i+1)*slots/n)
		for tag := 0; ; tag++ {
			key := base + ":{" + strconv.Itoa(tag) + "}"
			if s := keySlot(key); s >= lo && s < hi {
				keys[i] = key
				break
			}
		}
	}
	return keys
}

// Claim records h's number of shards in Redis, unless a replica has, and
// returns an error when the number there is another.
func (h *ShardedRedisHub) Claim(ctx context.Context) error {
	if len(h.shards) == 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n := strconv.Itoa(len(h.shards))
	cmds := rueidis.Commands{
		h.client.B().Set().Key(h.claim).Value(n).Nx().Build(),
		h.client.B().Get().Key(h.claim).Build(),
	}
	res := h.client.DoMulti(ctx, cmds...)
	if err := res[0].Error(); err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("streams: record the events' shards in redis: %w", err)
	}
	got, err := res[1].ToString()
	if err != nil {
		return fmt.Errorf("streams: read the events' shards from redis: %w", err)
	}
	if got != n {
		return fmt.Errorf("streams: the replicas on this Redis spread events over %s shards (%s), this one over %s: give every replica the same number; to change it, stop every replica and delete %s", got, h.claim, n, h.claim)
	}
	return nil
}

func (h *ShardedRedisHub) shard(user string) *RedisHub {
	f := fnv.New64a()
	f.Write([]byte(user))
	return h.shards[f.Sum64()%uint64(len(h.shards))]
}

// Publish adds ev to its user's shard. An event to every user goes to
// every shard and returns no id; its error is the first shard's.
func (h *ShardedRedisHub) Publish(ctx context.Context, ev Event) (string, error) {
	if ev.To != everyone {
		return h.shard(ev.To).Publish(ctx, ev)
	}
	return "", cmp.Or(h.each(func(s *RedisHub) error {
		_, err := s.Publish(ctx, ev)
		return err
	})...)
}

// each runs f on every shard at once, and returns their errors.
func (h *ShardedRedisHub) each(f func(s *RedisHub) error) []error {
	errs := make([]error, len(h.shards))
	var wg sync.WaitGroup
	for i, s := range h.shards {
		wg.Go(func() { errs[i] = f(s) })
	}
	wg.Wait()
	return errs
}

// Subscribe follows user's events in user's shard.
func (h *ShardedRedisHub) Subscribe(ctx context.Context, user, after string) (*Subscription, error) {
	return h.shard(user).Subscribe(ctx, user, after)
}

// Run runs every shard's [RedisHub.Run] loop until ctx ends.
func (h *ShardedRedisHub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("streams: this ShardedRedisHub's Run is already running; run one loop per hub")
	}
	defer h.running.Store(false)
	for _, s := range h.shards {
		s.OnError = h.OnError
	}
	return errors.Join(h.each(func(s *RedisHub) error { return s.Run(ctx) })...)
}
