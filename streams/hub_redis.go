package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// replayScript reads whether ARGV[1] (after) is gone from KEYS[1], and the
// newest ARGV[4] of user ARGV[3]'s events in (after, ARGV[2]] (none when
// empty; more is a gap too). Returns {gap ("0" or "1"), then id, type, data
// of each event, oldest first}.
const replayScript = `
local gap = '0'
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then gap = '1' end
local out, limit = {}, tonumber(ARGV[4])
if ARGV[2] ~= '' then
  local from = '(' .. ARGV[1]
  while true do
    local page = redis.call('XRANGE', KEYS[1], from, ARGV[2], 'COUNT', 256)
    for _, e in ipairs(page) do
      local f, to, typ, data = e[2], nil, '', ''
      for i = 1, #f, 2 do
        if f[i] == 'to' then to = f[i + 1]
        elseif f[i] == 'type' then typ = f[i + 1]
        elseif f[i] == 'data' then data = f[i + 1] end
      end
      if to == ARGV[3] or to == '*' then out[#out + 1] = {e[1], typ, data} end
    end
    if #page < 256 then break end
    from = '(' .. page[#page][1]
  end
end
local res = {gap}
if #out > limit then res[1] = '1' end
for i = math.max(#out - limit, 0) + 1, #out do
  for _, v in ipairs(out[i]) do res[#res + 1] = v end
end
return res
`

var replay = rueidis.NewLuaScript(replayScript)

// RedisHub is a [Hub] shared by every replica on the same Redis and
// prefix: events are entries of the Redis stream "<prefix>events", which
// each replica's [RedisHub.Run] reads and Subscribe replays from. A
// subscriber always learns of lost events ([EventGap]): a failed publish
// adds a gap marker once Redis answers, and so does a failed read whose
// unread entries were lost.
type RedisHub struct {
	OnError func(error) // when set, told each failure of Run's reading

	client rueidis.Client
	key    string
	maxLen int

	fanout              // its lock guards seen
	seen    eventID     // the newest entry Run has delivered
	known   atomic.Bool // seen is a place in the stream, found by start
	startMu sync.Mutex  // one start at a time
	running atomic.Bool
	failed  bool // Run's last read failed; only Run's goroutine uses it
	// The users whose events a Publish lost, for a gap marker once Redis
	// answers; lostAll is every user.
	lostMu  sync.Mutex
	lost    map[string]struct{}
	lostAll bool
}

// maxLost bounds the users a RedisHub remembers; past it, one marker goes to all.
const maxLost = 10000

// Bounds of the Redis hub's calls and of Run's retries.
const (
	callTimeout = time.Second
	readBlock   = 500 * time.Millisecond // short: Run's end waits for a read sent
	readCount   = 512
	// readLinger is Run's wait after a read of fewer than readCount entries,
	// so that under load a read takes many (BENCHMARKS.md).
	readLinger = time.Millisecond
	firstRetry = 100 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// NewRedisHub returns a hub whose stream keeps about maxLen events for
// replay; each subscription buffers up to buffer events before it is ended.
// It panics unless maxLen and buffer are at least 1.
func NewRedisHub(client rueidis.Client, prefix string, maxLen, buffer int) *RedisHub {
	if maxLen < 1 {
		panic("streams: a Redis hub's stream must keep at least one event")
	}
	h := &RedisHub{client: client, key: prefix + "events", maxLen: maxLen}
	h.init(buffer)
	return h
}

// Publish adds ev to the stream and returns its id. On an error the
// event's user is told of the gap once Redis answers.
func (h *RedisHub) Publish(ctx context.Context, ev Event) (string, error) {
	id, err := h.add(ctx, ev)
	if err != nil {
		h.noteLost(ev.To)
		return "", fmt.Errorf("streams: publish to redis (its user's streams are told of the gap once Redis answers): %w", err)
	}
	return id, nil
}

func (h *RedisHub) add(ctx context.Context, ev Event) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return h.client.Do(ctx, h.xadd(ev)).ToString()
}

func (h *RedisHub) xadd(ev Event) rueidis.Completed {
	return h.client.B().Xadd().Key(h.key).Maxlen().Almost().Threshold(strconv.Itoa(h.maxLen)).Id("*").
		FieldValue().FieldValue("type", ev.Type).FieldValue("to", ev.To).FieldValue("data", rueidis.BinaryString(ev.Data)).Build()
}

func (h *RedisHub) noteLost(user string) {
	h.lostMu.Lock()
	defer h.lostMu.Unlock()
	switch {
	case h.lostAll:
	case user == everyone || len(h.lost) >= maxLost:
		h.lostAll, h.lost = true, nil // one marker for everyone says it all
	default:
		if h.lost == nil {
			h.lost = map[string]struct{}{}
		}
		h.lost[user] = struct{}{}
	}
}

// markGaps adds a gap marker for each user whose events a Publish lost.
func (h *RedisHub) markGaps(ctx context.Context) error {
	h.lostMu.Lock()
	users := slices.Collect(maps.Keys(h.lost))
	if h.lostAll {
		users = []string{everyone}
	}
	h.lost, h.lostAll = nil, false
	h.lostMu.Unlock()
	if len(users) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cmds := make(rueidis.Commands, len(users))
	for i, u := range users {
		cmds[i] = h.xadd(Event{Type: EventGap, To: u})
	}
	var first error
	for i, res := range h.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			h.noteLost(users[i])
			first = cmp.Or(first, err)
		}
	}
	if first != nil {
		return fmt.Errorf("streams: add gap markers to redis stream %s: %w", h.key, first)
	}
	return nil
}

// Subscribe follows user's events; with an after, Replay holds the newest
// maxLen of them after it. The subscription starts where Run is and the
// replay reads up to there, so the two join without loss or repeat.
func (h *RedisHub) Subscribe(ctx context.Context, user, after string) (*Subscription, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	a, ok := parseID(after)
	if ok {
		h.mu.Lock()
		ahead := a.compare(h.seen) > 0
		h.mu.Unlock()
		if ahead { // Run has not reached after: is it in the stream at all?
			cmd := h.client.B().Xrange().Key(h.key).Start(a.String()).End("+").Count(1).Build()
			entries, err := h.client.Do(ctx, cmd).AsXRange()
			if err != nil {
				return nil, fmt.Errorf("streams: read redis stream %s: %w", h.key, err)
			}
			ok = len(entries) > 0
		}
	}
	if !ok {
		a = eventID{}
	}
	h.mu.Lock()
	s := h.addLocked(user, a)
	upto, at := "", a
	if h.seen.compare(a) > 0 {
		upto, at = h.seen.String(), h.seen
	}
	s.At = at.String()
	h.mu.Unlock()
	if !ok { // no after, or none of this stream's: live events only
		s.Gap = after != ""
		return s, nil
	}
	gap, events, err := h.replay(ctx, user, after, upto)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Gap, s.Replay = gap, events
	return s, nil
}

// Run delivers the stream's new entries to this replica's subscriptions
// until ctx ends; a second Run at once returns an error. While Redis
// fails, it tells OnError and retries, backing off from 100 ms to 5 s.
func (h *RedisHub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("streams: this RedisHub's Run is already running; run one loop per hub")
	}
	defer h.running.Store(false)
	wait := firstRetry
	for ctx.Err() == nil {
		n, err := h.read(ctx)
		if err == nil {
			wait = firstRetry
			if n > 1 && n < readCount {
				sleep(ctx, readLinger)
			}
			continue
		}
		if ctx.Err() != nil {
			break
		}
		h.failed = true
		if h.OnError != nil {
			h.OnError(err)
		}
		sleep(ctx, wait)
		wait = min(2*wait, maxRetry)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// read marks what a failed read or publish lost, then delivers the entries after seen.
func (h *RedisHub) read(ctx context.Context) (int, error) {
	if err := h.start(ctx); err != nil {
		return 0, err
	}
	h.mu.Lock()
	seen := h.seen
	h.mu.Unlock()
	if h.failed {
		lost, err := h.lostSince(ctx, seen)
		if err != nil {
			return 0, err
		}
		if lost { // every subscription here may have missed some: tell each, now
			h.mu.Lock()
			h.deliverLocked(Event{Type: EventGap, To: everyone}, lastID)
			h.mu.Unlock()
		}
		h.failed = false
	}
	if err := h.markGaps(ctx); err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, readBlock+callTimeout)
	defer cancel()
	cmd := h.client.B().Xread().Count(readCount).Block(readBlock.Milliseconds()).Streams().Key(h.key).Id(seen.String()).Build()
	streams, err := h.client.Do(rctx, cmd).AsXRead()
	if rueidis.IsRedisNil(err) || unblocked(err) { // nothing new within the block
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("streams: read redis stream %s: %w", h.key, err)
	}
	entries := streams[h.key]
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range entries {
		id, ok := parseID(e.ID)
		if !ok || id.compare(h.seen) <= 0 {
			continue // not ours to read, or seen already
		}
		ev := Event{ID: e.ID, Type: e.FieldValues["type"], To: e.FieldValues["to"]}
		if d := e.FieldValues["data"]; d != "" {
			ev.Data = []byte(d)
		}
		h.deliverLocked(ev, id)
		h.seen = id
	}
	return len(entries), nil
}

// unblocked reports whether err ended a blocking read early, as a failover does.
func unblocked(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "UNBLOCKED")
}

// start finds, once, where live delivery begins: the stream's newest entry.
func (h *RedisHub) start(ctx context.Context) error {
	if h.known.Load() {
		return nil
	}
	h.startMu.Lock()
	defer h.startMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cmd := h.client.B().Xrevrange().Key(h.key).End("+").Start("-").Count(1).Build()
	entries, err := h.client.Do(ctx, cmd).AsXRange()
	if err != nil {
		return fmt.Errorf("streams: find the end of redis stream %s: %w", h.key, err)
	}
	var at eventID
	if len(entries) > 0 {
		at, _ = parseID(entries[0].ID)
	}
	h.mu.Lock()
	if !h.known.Load() {
		h.seen = at
		h.known.Store(true)
	}
	h.mu.Unlock()
	return nil
}

// lastID is after every id: an event given it is skipped by no one.
var lastID = eventID{math.MaxUint64, math.MaxUint64}

// lostSince reports whether entries after seen may be gone: the stream holds
// nothing at or before seen, is missing, or its ids went back.
func (h *RedisHub) lostSince(ctx context.Context, seen eventID) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res := h.client.DoMulti(ctx,
		h.client.B().XinfoStream().Key(h.key).Build(),
		h.client.B().Xrange().Key(h.key).Start("-").End(seen.String()).Count(1).Build())
	info, err := res[0].AsMap()
	if err != nil && strings.Contains(err.Error(), "no such key") {
		return seen != (eventID{}), nil
	}
	kept, err2 := res[1].AsXRange()
	if err = cmp.Or(err, err2); err != nil {
		return false, fmt.Errorf("streams: read redis stream %s: %w", h.key, err)
	}
	lastMsg, addedMsg, lengthMsg := info["last-generated-id"], info["entries-added"], info["length"]
	lastStr, _ := lastMsg.ToString()
	added, _ := addedMsg.AsInt64()
	length, _ := lengthMsg.AsInt64()
	last, _ := parseID(lastStr)
	switch {
	case last.compare(seen) < 0:
		return true, nil
	case seen == (eventID{}):
		return added > length, nil
	}
	return len(kept) == 0, nil
}

func (h *RedisHub) replay(ctx context.Context, user, after, upto string) (bool, []Event, error) {
	vals, err := replay.Exec(ctx, h.client, []string{h.key}, []string{after, upto, user, strconv.Itoa(h.maxLen)}).AsStrSlice()
	if err == nil && (len(vals)-1)%3 != 0 {
		err = errors.New("unexpected reply")
	}
	if err != nil {
		return false, nil, fmt.Errorf("streams: replay from redis stream %s: %w", h.key, err)
	}
	var events []Event
	for i := 1; i < len(vals); i += 3 {
		ev := Event{ID: vals[i], Type: vals[i+1], To: user}
		if vals[i+2] != "" {
			ev.Data = []byte(vals[i+2])
		}
		events = append(events, ev)
	}
	return vals[0] == "1", events, nil
}
