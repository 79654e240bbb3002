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
	// reserve takes one of key's slots for a new stream. ok is false when
	// key holds max streams already; live is how many streams key holds
	// open, this one included when ok. err is a failure of the cap's store.
	reserve(ctx context.Context, key string) (s capSlot, live int, ok bool, err error)
	capacity() int
}

// A capSlot is one reserved stream: release it when the stream ends. A second
// release does nothing, and the zero capSlot's methods do nothing.
type capSlot struct {
	owner slotOwner
	key   string
	lease string // the lease's member in Redis; "" in memory
	// id numbers an in-memory reservation, so a second release frees
	// nothing, and at is its shard and row; both are 0 when nothing is
	// counted in memory.
	id uint64
	at uint32
}

type slotOwner interface {
	releaseSlot(s capSlot)
	refreshSlot(ctx context.Context, s capSlot) error
}

func (s capSlot) release() {
	if s.owner != nil {
		s.owner.releaseSlot(s)
	}
}

// refresh extends the slot's lease where the cap keeps one (Redis), so a
// live stream keeps its slot while a dead replica's slots expire.
func (s capSlot) refresh(ctx context.Context) error {
	if s.owner == nil {
		return nil
	}
	return s.owner.refreshSlot(ctx, s)
}

// EventGap is the type of the events a hub adds to say that a user's
// subscriptions may have missed events before it (a publish or a read
// failed, or events were trimmed). Its Data is empty; the client should
// reload what the lost events would have changed.
const EventGap = "stream.gap"

// everyone is the To of an event for every user.
const everyone = "*"

// An Event is one message of a caller's event stream.
type Event struct {
	// ID is given by the hub: "<unix ms>-<seq>", as Redis stream ids are.
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
type Hub interface {
	// Publish gives ev an id and sends it to every subscription of ev.To,
	// on every replica. It never waits for a subscriber.
	Publish(ctx context.Context, ev Event) (id string, err error)
	// Subscribe follows user's events after the id after ("" for none):
	// the kept ones are in Replay, Gap says some are no longer kept, and
	// later ones arrive on Events, none also in Replay.
	Subscribe(ctx context.Context, user, after string) (*Subscription, error)
}

// errSlow ends a subscription whose buffer filled: the hub never waits.
var errSlow = errors.New("streams: the subscriber fell behind")

// A Subscription is one stream's following of a hub. Read Events until it
// is closed, then Err says why; Close it when the stream ends.
type Subscription struct {
	// Replay are the kept events after Subscribe's after, oldest first.
	Replay []Event
	// Gap says that events after Subscribe's after are no longer kept:
	// the subscriber missed some.
	Gap bool
	// At is the hub's place when the subscription began: events on Events
	// come after it, so a state read once Subscribe returns is as of At.
	// It is "0-0" when the hub had no event yet.
	At string

	user   string
	skip   eventID       // events up to this id are not sent: the subscriber has them
	events chan *Event   // closed by the hub's fan-out, under its lock
	done   chan struct{} // closed by end, once err is set
	err    error
	cancel func() // removes the subscription from its hub
}

func newSubscription(user string, buffer int) *Subscription {
	return &Subscription{user: user, events: make(chan *Event, buffer), done: make(chan struct{})}
}

// Events delivers the events published after Subscribe, in order, and is
// closed when the subscription ends (Close, or Err). Every subscriber
// receives the same *Event: never change it.
func (s *Subscription) Events() <-chan *Event { return s.events }

// Err is why the hub ended the subscription (it fell behind), else nil.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription; it may be called more than once.
func (s *Subscription) Close() {
	if s.cancel != nil {
		s.cancel()
	}
}

// end ends the subscription with err. Only the fan-out calls it, once,
// under its lock, so no event is ever sent on the closed channel.
func (s *Subscription) end(err error) {
	s.err = err
	close(s.events)
	close(s.done)
}
