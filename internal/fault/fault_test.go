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
	wrapped := fmt.Errorf("store: delete item: %w", fault.ErrNotFound)
	if got := fault.Kind(wrapped); got != fault.ErrNotFound {
		t.Fatalf("Kind(%v) = %v, want ErrNotFound", wrapped, got)
	}
	if got := fault.Kind(errors.New("disk full")); got != nil {
		t.Fatalf("Kind of a plain error = %v, want nil", got)
	}
	if fault.ErrNotFound.Error() != "not found" {
		t.Fatalf("ErrNotFound says %q", fault.ErrNotFound)
	}
}

// Outage marks a store's failure ErrUnavailable, and leaves a kind, a
// caller that left and nil alone.
func TestOutage(t *testing.T) {
	down := errors.New("connection refused")
	got := fault.Outage(down)
	if !errors.Is(got, fault.ErrUnavailable) || !errors.Is(got, down) {
		t.Fatalf("Outage(%v) = %v, want it ErrUnavailable and wrapping the cause", down, got)
	}
	if fault.Outage(got) != got {
		t.Fatal("Outage marked an error twice")
	}
	for _, err := range []error{nil, fault.ErrNotFound, fmt.Errorf("x: %w", fault.ErrTooMany), context.Canceled} {
		if out := fault.Outage(err); out != err {
			t.Fatalf("Outage(%v) = %v, want it unchanged", err, out)
		}
	}
	if !errors.Is(fault.Outage(context.DeadlineExceeded), fault.ErrUnavailable) {
		t.Fatal("a store too slow (deadline exceeded) is not ErrUnavailable")
	}
}
