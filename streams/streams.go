// Package streams serves Server-Sent Events: the stream plane (the caps on
// the streams a caller and a user hold open, the open budgets), the hub that
// carries events in memory or across replicas in Redis, one stream's life,
// and the registry by which a feature declares a stream operation ([Add])
// and its users' events ([DeclareEvents], [Publish]).
//
// It is built on package api, which does not import it: a [Runtime] serves
// an api.Server as one of its api.Config.Features ([Runtime.Feature]).
package streams

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
)

// EventGap is the type of the events a hub adds to say that a user's
// subscriptions may have missed events before it. Its Data is empty; the
// client should reload what the lost events would have changed.
const EventGap = "stream.gap"

// everyone is the To of an event for every user.
const everyone = "*"

// An Event is one message of a caller's event stream.
type Event struct {
	ID   string // given by the hub: "<unix ms>-<seq>", as Redis stream ids are
	Type string // "apikey.created", say
	To   string // the id of the user whose streams receive it
	Data json.RawMessage
}

// A Hub fans events out to the streams that follow them, and keeps the
// newest for a reconnecting stream to replay (its Last-Event-ID).
type Hub interface {
	// Publish gives ev an id and sends it to every subscription of ev.To,
	// on every replica. It never waits for a subscriber.
	Publish(ctx context.Context, ev Event) (id string, err error)
	// Subscribe follows user's events after the id after ("" for none).
	Subscribe(ctx context.Context, user, after string) (*Subscription, error)
}

var errSlow = errors.New("streams: the subscriber fell behind")

// A Subscription is one stream's following of a hub. Read Events until it
// is closed, then Err says why; Close it when the stream ends.
type Subscription struct {
	// Replay are the kept events after Subscribe's after, oldest first.
	Replay []Event
	// Gap says that events after Subscribe's after are no longer kept.
	Gap bool
	// At is the hub's place when the subscription began ("0-0" before any
	// event): events on Events come after it.
	At string

	user   string
	skip   eventID     // events up to this id are not sent: the subscriber has them
	events chan *Event // closed by the hub's fan-out, under its lock
	err    error       // set by the fan-out as it closes events, under its lock
	f      *fanout
}

// Events delivers the events published after Subscribe, in order, and is
// closed when the subscription ends. Every subscriber receives the same
// *Event: never change it.
func (s *Subscription) Events() <-chan *Event { return s.events }

// Err is why the hub ended the subscription (it fell behind), else nil.
func (s *Subscription) Err() error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.err
}

// Close ends the subscription; it may be called more than once.
func (s *Subscription) Close() { s.f.remove(s) }

// fanout hands each event to its user's subscriptions in this process. Its
// lock is also the hub's, so a subscription registered under it sees every
// event delivered after and none before. A send that would block ends that
// subscription with errSlow.
type fanout struct {
	mu     sync.Mutex
	buffer int
	subs   map[string][]*Subscription // by user
	probed []func(user string)        // called with the user of each probe
}

func (f *fanout) init(buffer int) {
	if buffer < 1 {
		panic("streams: a hub's buffer must hold at least one event")
	}
	f.buffer = buffer
	f.subs = map[string][]*Subscription{}
}

// addLocked registers a subscription of user that skips events up to skip.
func (f *fanout) addLocked(user string, skip eventID) *Subscription {
	s := &Subscription{user: user, skip: skip, events: make(chan *Event, f.buffer), f: f}
	f.subs[user] = append(f.subs[user], s)
	return s
}

// deliverLocked sends ev to ev.To's subscriptions, or a probe to the probed funcs.
func (f *fanout) deliverLocked(ev Event, id eventID) {
	if ev.Type == probeEvent { // a probe, of the user in its data
		for _, probed := range f.probed {
			probed(string(ev.Data))
		}
		return
	}
	if ev.To != everyone {
		f.deliverToLocked(ev.To, ev, id)
		return
	}
	for user := range f.subs { // deliverToLocked may delete user's entry: allowed while ranging
		f.deliverToLocked(user, ev, id)
	}
}

func (f *fanout) deliverToLocked(user string, ev Event, id eventID) {
	subs := f.subs[user]
	if len(subs) == 0 {
		return
	}
	shared := &ev // one copy, read by every subscriber: a buffered event costs each a pointer
	for i := 0; i < len(subs); {
		s := subs[i]
		if id.compare(s.skip) <= 0 {
			i++
			continue
		}
		select {
		case s.events <- shared:
			i++
		default:
			subs = f.dropLocked(user, subs, i, errSlow)
		}
	}
}

// remove removes s and ends it, unless f has ended it already.
func (f *fanout) remove(s *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.subs[s.user], s); i >= 0 {
		f.dropLocked(s.user, f.subs[s.user], i, nil)
	}
}

// dropLocked removes and ends subs[i] of user's, returning those left.
func (f *fanout) dropLocked(user string, subs []*Subscription, i int, err error) []*Subscription {
	subs[i].err = err
	close(subs[i].events)
	if subs = slices.Delete(subs, i, i+1); len(subs) == 0 {
		delete(f.subs, user)
	} else {
		f.subs[user] = subs
	}
	return subs
}
