package api

import (
	"net/http"
	"sync/atomic"
)

// traffic counts the requests the server answers, and those it refuses
// with 429, for the live snapshot (GET /api/v1/system/live). The access
// log reports each response to it.
type traffic struct {
	requests atomic.Uint64
	limited  atomic.Uint64
}

// observe counts one response.
func (t *traffic) observe(status int) {
	t.requests.Add(1)
	if status == http.StatusTooManyRequests {
		t.limited.Add(1)
	}
}
