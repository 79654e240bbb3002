// A runnable example of the hub that fans events out to streams.

package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/brain-template/brain/streams"
)

// A stream subscribes to its user's events; an event published to the
// user arrives on Events, with the id the hub gave it. A stream that
// reconnects with the last id it received (Last-Event-ID) replays what it
// missed. The hub's clock is passed in, so the ids are fixed.
func ExampleMemoryHub() {
	ctx := context.Background()
	hub := streams.NewMemoryHub(100, 16) // keep 100 events for replay; buffer 16 per subscriber
	now := time.UnixMilli(1_767_268_800_000)
	hub.Now = func() time.Time { return now }

	sub, _ := hub.Subscribe(ctx, "alice", "") // a MemoryHub never fails
	defer sub.Close()

	id, _ := hub.Publish(ctx, streams.Event{Type: "apikey.created", To: "alice", Data: json.RawMessage(`{"name":"ci"}`)})
	_, _ = hub.Publish(ctx, streams.Event{Type: "apikey.created", To: "bob", Data: json.RawMessage(`{"name":"laptop"}`)})
	ev := <-sub.Events()
	fmt.Println("published", id, "received", ev.ID, ev.Type, string(ev.Data))

	// bob's event went to bob only.
	select {
	case ev := <-sub.Events():
		fmt.Println("unexpected", ev.Type)
	default:
		fmt.Println("nothing more for alice")
	}

	// The next second, another event; a stream that resumes after the
	// first replays it.
	now = now.Add(time.Second)
	_, _ = hub.Publish(ctx, streams.Event{Type: "apikey.deleted", To: "alice", Data: json.RawMessage(`{"name":"ci"}`)})
	resumed, _ := hub.Subscribe(ctx, "alice", id)
	defer resumed.Close()
	for _, ev := range resumed.Replay {
		fmt.Println("replayed", ev.ID, ev.Type, "gap:", resumed.Gap)
	}
	// Output:
	// published 1767268800000-0 received 1767268800000-0 apikey.created {"name":"ci"}
	// nothing more for alice
	// replayed 1767268801000-0 apikey.deleted gap: false
}
