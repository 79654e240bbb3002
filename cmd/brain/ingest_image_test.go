package main

import "slices"

// The memory example's part of TestImage: a batch ingested in the image's
// first run, its job done, is found by a query in the second, from the
// SQLite database in the image's volume.
func init() {
	imageChecks = append(imageChecks, func(c client, cookie string) func(client, string) {
		s := session{c, cookie}
		id := s.accepted(s.ingest(map[string]any{"project": "image", "items": []map[string]any{{"text": "a heron by the weir"}}}), false)
		if j := s.waitJob(id, serverWork); j.ItemsTotal != 1 {
			c.t.Fatalf("job %s: %+v, want 1 item", id, j)
		}
		return func(c client, cookie string) {
			if got := (session{c, cookie}).query("heron"); !slices.Equal(got, []string{"a heron by the weir"}) {
				c.t.Fatalf("after a restart on the same volume, query heron found %q, want the item ingested before it", got)
			}
		}
	})
}
