package ingest

import (
	"strings"

	"github.com/google/uuid"
)

// newJobID returns a job's id: a time-ordered (version 7) UUID.
func newJobID() string { return uuid.Must(uuid.NewV7()).String() }

// newItemID returns an item's id: a random (version 4) UUID.
func newItemID() string { return uuid.NewString() }

// isUUID reports whether s has the canonical form of a UUID: 36
// characters, hex digits in lower case.
func isUUID(s string) bool {
	return len(s) == 36 && uuid.Validate(s) == nil && strings.ToLower(s) == s
}
