package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/brain-template/brain/internal/fault"
)

// ErrorFor answers each kind with the table's status, the operation's
// message or the table's, Retry-After on a 503, and leaves what it does
// not know alone.
func TestErrorFor(t *testing.T) {
	cases := []struct {
		err    error
		msgs   Messages
		status int
		msg    string
	}{
		{fmt.Errorf("store: %w", fault.ErrNotFound), Messages{fault.ErrNotFound: "you have no bookmark with that id"}, http.StatusNotFound, "you have no bookmark with that id"},
		{fault.ErrNotFound, nil, http.StatusNotFound, "you have nothing with that id"},
		{fault.ErrConflict, nil, http.StatusConflict, "that exists already"},
		{fault.ErrTooMany, Messages{fault.ErrTooMany: "too many keys"}, http.StatusConflict, "too many keys"},
		{fault.Outage(errors.New("connection refused")), nil, http.StatusServiceUnavailable, msgStoreUnavailable},
	}
	for _, c := range cases {
		var e *Error
		if !errors.As(ErrorFor(c.err, c.msgs), &e) {
			t.Fatalf("ErrorFor(%v) is no envelope", c.err)
		}
		if e.status != c.status || e.Message != c.msg || e.Code != CodeForStatus(c.status) {
			t.Fatalf("ErrorFor(%v) = %d %q %q, want %d %q", c.err, e.status, e.Code, e.Message, c.status, c.msg)
		}
		if got := StatusFor(c.err); got != c.status {
			t.Fatalf("StatusFor(%v) = %d, want %d", c.err, got, c.status)
		}
		if c.status == http.StatusServiceUnavailable && (e.GetHeaders().Get("Retry-After") == "" || e.cause == nil) {
			t.Fatalf("a 503 without Retry-After or cause: %+v", e)
		} else if c.status != http.StatusServiceUnavailable && e.cause != nil {
			t.Fatalf("a %d keeps a cause, which the log would report as a failure", c.status)
		}
	}
	plain := errors.New("a bug")
	if ErrorFor(plain, nil) != plain || ErrorFor(nil, nil) != nil || StatusFor(plain) != 0 {
		t.Fatal("an error of no kind, or nil, is not left alone")
	}
	own := NewError(http.StatusTeapot, "mine")
	if ErrorFor(own, nil) != error(own) {
		t.Fatal("an envelope is not left alone")
	}
}
