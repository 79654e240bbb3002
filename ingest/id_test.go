package ingest

import (
	"regexp"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// The ids match the spec's pattern of job and item ids (api's uuidPattern),
// and pass isUUID; job ids are version 7 and sort in the order they were
// made, item ids version 4.
func TestIDs(t *testing.T) {
	pattern := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, tc := range []struct {
		name    string
		newID   func() string
		version uuid.Version
	}{{"job", newJobID, 7}, {"item", newItemID, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for range 1000 {
				id := tc.newID()
				u, err := uuid.Parse(id)
				if !pattern.MatchString(id) || !isUUID(id) || err != nil || u.Version() != tc.version || u.Variant() != uuid.RFC4122 {
					t.Fatalf("id %q: matches the pattern %v, isUUID %v, parse %v, version %v, variant %v; want version %d", id, pattern.MatchString(id), isUUID(id), err, u.Version(), u.Variant(), tc.version)
				}
				ids = append(ids, id)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
				t.Fatal("an id repeats")
			}
			if tc.version == 7 && !slices.IsSorted(ids) {
				t.Fatal("job ids do not sort in the order they were made")
			}
		})
	}
}
