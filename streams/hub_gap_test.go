package streams

import (
	"context"
	"fmt"
	"testing"

	"github.com/brain-template/brain/ratelimit/redistest"
)

// A hub that lost the events of more users than it remembers sends one
// gap marker to every user, which each user's resume replays: its memory
// stays bounded, and nobody misses the gap.
func TestRedisHubLostTooManyUsersMarksEveryone(t *testing.T) {
	h := NewRedisHub(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), 100, 16)
	ctx := context.Background()
	first, err := h.Publish(ctx, Event{Type: "first", To: "someone"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxLost + 1 {
		h.noteLost(fmt.Sprint("user", i))
	}
	if h.lost != nil || !h.lostAll {
		t.Fatalf("after %d users lost: %d remembered, every user %v; want none, and every user", maxLost+1, len(h.lost), h.lostAll)
	}
	if err := h.markGaps(ctx); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"user7", "anyone"} {
		s, err := h.Subscribe(ctx, user, first)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if len(s.Replay) != 1 || s.Replay[0].Type != EventGap {
			t.Fatalf("%s resuming after %s replays %+v, want the one gap marker", user, first, s.Replay)
		}
	}
}
