package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/brain-template/brain/internal/fault"
)

// A kind is found through wrapping, and the messages name no package.
func TestKind(t *testing.T) {
	wrapped := fmt.Errorf("store: delete item: %w", fault.NotFound)
	if got := fault.Kind(wrapped); got != fault.NotFound {
		t.Fatalf("Kind(%v) = %v, want NotFound", wrapped, got)
	}
	if got := fault.Kind(errors.New("disk full")); got != nil {
		t.Fatalf("Kind of a plain error = %v, want nil", got)
	}
	if fault.NotFound.Error() != "not found" {
		t.Fatalf("NotFound says %q", fault.NotFound)
	}
}

// Outage marks a store's failure Unavailable, and leaves a kind, a
// caller that left and nil alone.
func TestOutage(t *testing.T) {
	down := errors.New("connection refused")
	got := fault.Outage(down)
	if !errors.Is(got, fault.Unavailable) || !errors.Is(got, down) {
		t.Fatalf("Outage(%v) = %v, want it Unavailable and wrapping the cause", down, got)
	}
	if fault.Outage(got) != got {
		t.Fatal("Outage marked an error twice")
	}
	for _, err := range []error{nil, fault.NotFound, fmt.Errorf("x: %w", fault.TooMany), context.Canceled} {
		if out := fault.Outage(err); out != err {
			t.Fatalf("Outage(%v) = %v, want it unchanged", err, out)
		}
	}
	if !errors.Is(fault.Outage(context.DeadlineExceeded), fault.Unavailable) {
		t.Fatal("a store too slow (deadline exceeded) is not Unavailable")
	}
}
