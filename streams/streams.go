package streams

import (
	"context"
	"encoding/json"
	"errors"
)

// A Cap bounds how many streams each caller holds open at once, across
// every stream endpoint. [MemoryCap] counts on one process; [RedisCap]
// counts across every replica that shares a Redis.
type Cap interface {
	// Reserve takes one of key's slots for a new stream. ok is false when
	// key holds Max streams already. live is how many streams key holds
	// open, this one included when ok. err is a failure of the cap's store;
	// ok is then false too.
	Reserve(ctx context.Context, key string) (s Slot, live int, ok bool, err error)
	// Max is the most streams one key may hold open.
	Max() int
}

// A Slot is one reserved stream. Release it when the stream ends, for
// any reason; releasing it again does nothing, so a deferred Release may
// follow an early one. The zero Slot's methods do nothing.
type Slot struct {
	owner slotOwner
	key   string
	lease string // the lease's member in Redis; "" in memory
	// In memory (a MemoryCap's, or the count a RedisCap keeps in its
	// fallback), id numbers the reservation, so that a second Release of
	// the slot finds nothing to free rather than another stream's slot of
	// the same key, and at is where it is kept (its shard and row), so
	// Release goes straight there. Both are 0 where nothing is counted in
	// memory (a RedisCap without a fallback).
	id uint64
	at uint32
}

// slotOwner is the cap a slot came from.
type slotOwner interface {
	release(s Slot)
	refresh(ctx context.Context, s Slot) error
}

// Release frees the slot.
func (s Slot) Release() {
	if s.owner != nil {
		s.owner.release(s)
	}
}

// Refresh extends the slot's lease, where the cap keeps one (Redis), so a
// live stream keeps its slot while the slots of a replica that died
// expire. Call it at each heartbeat. In memory it does nothing.
func (s Slot) Refresh(ctx context.Context) error {
	if s.owner == nil {
		return nil
	}
	return s.owner.refresh(ctx, s)
}

// EventGap is the type of the events a hub adds itself to say that a
// user's subscriptions may have missed events before it: a [RedisHub]
// that could not publish some of a user's events writes one into the
// user's stream once Redis answers again (so it reaches every replica,
// and a subscriber resuming from before it replays it), and one whose
// reading found events gone (trimmed, or lost with Redis's data) gives
// one, without an ID, to every subscription it holds. Its Data is empty.
// A subscriber should tell its client, which reloads what the lost events
// would have changed.
const EventGap = "stream.gap"

// everyone is the To of an event for every user: a gap marker of a hub
// that lost too many users' events to name them.
const everyone = "*"

// An Event is one message of a caller's event stream.
type Event struct {
	// ID is given by the hub: "<unix ms>-<seq>", the form Redis stream ids
	// take, so ids order the same in memory and in Redis ([CompareIDs]).
	ID string
	// Type names the event: "apikey.created", say.
	Type string
	// To is the id of the user whose streams receive it.
	To string
	// Data is the event's JSON.
	Data json.RawMessage
}

// A Hub fans events out to the streams that follow them, and keeps the
// newest for a reconnecting stream to replay (its Last-Event-ID).
// [MemoryHub] serves one process; [RedisHub] every replica that shares a
// Redis.
type Hub interface {
	// Publish gives ev an id and sends it to every subscription of ev.To,
	// on every replica. It never waits for a subscriber.
	Publish(ctx context.Context, ev Event) (id string, err error)
	// Subscribe follows user's events. after is the id of the last event
	// the subscriber has ("" for none): the events after it that the hub
	// still keeps are in Replay, and Gap says that some after it are no
	// longer kept. Events published once Subscribe returns arrive on
	// Events, none of them also in Replay.
	Subscribe(ctx context.Context, user, after string) (*Subscription, error)
}

// ErrSlow ends a subscription whose subscriber fell so far behind that
// its buffer filled: the hub never waits for one subscriber.
var ErrSlow = errors.New("streams: the subscriber fell behind")

// A Subscription is one stream's following of a hub. Read Events until it
// is closed, then Err says why; Close it when the stream ends.
type Subscription struct {
	// Replay are the kept events after Subscribe's after, oldest first.
	Replay []Event
	// Gap says that events after Subscribe's after are no longer kept:
	// the subscriber missed some.
	Gap bool
	// At is the hub's place when the subscription began: every event that
	// arrives on Events comes after it, and Replay and the subscriber's
	// after hold what came before (back to after). A state read once
	// Subscribe returns reflects every event up to At, so At is the id to
	// give it: a resume from At replays exactly what followed. It is "0-0"
	// when the hub had no event yet.
	At string

	user   string
	skip   eventID       // events up to this id are not sent: the subscriber has them (Replay, or its after)
	events chan *Event   // closed by the hub's fan-out, under its lock, when it ends the subscription
	done   chan struct{} // closed by end, once err is set
	err    error
	cancel func() // removes the subscription from its hub, which then ends it
}

// newSubscription returns a subscription of user whose Events buffer
// holds buffer events. Its hub sets cancel before handing it out.
func newSubscription(user string, buffer int) *Subscription {
	return &Subscription{user: user, events: make(chan *Event, buffer), done: make(chan struct{})}
}

// Events delivers the events published after Subscribe, in order. It is
// closed when the subscription ends: by Close, or by the hub (Err). The
// events buffered when the hub ends it are still received first. Every
// subscriber of an event receives the same *Event: read it, never change it.
func (s *Subscription) Events() <-chan *Event { return s.events }

// Err is why the subscription ended: ErrSlow, or nil after Close (and
// while it lasts).
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription. It is safe to call more than once, and
// from any goroutine.
func (s *Subscription) Close() {
	if s.cancel != nil {
		s.cancel()
	}
}

// end ends the subscription with err. Only the hub's fan-out calls it,
// once, under its lock, as it removes the subscription: so no event is
// ever sent on the closed channel, and Close (which takes that lock
// through cancel) never waits on a lock of the subscription's own.
func (s *Subscription) end(err error) {
	s.err = err
	close(s.events)
	close(s.done)
}
