// Tests of the legacy rate-limit headers of a stream's answer.

package streams_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
)

// The legacy X-RateLimit-* of a stream describe its open budget, a token
// bucket whose reset is a time, never a cap (which has no clock): an
// admitted stream's reset is when the open budget is full again; a cap's
// refusal, which no budget decided, says the cap and, as its reset, when
// its Retry-After ends.
func TestStreamLegacyHeadersDescribeTheOpenBudget(t *testing.T) {
	s := apitest.Start(t, api.Config{Limits: api.Limits{StreamOpens: ratelimit.Rate{Limit: 60, Window: time.Minute, Burst: 20}}},
		apitest.Streams(streams.Config{RetryAfter: 7 * time.Second}))
	ada := s.Session()
	reset := func(r apitest.Reply) int64 {
		n, err := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			t.Fatalf("X-RateLimit-Reset %q", r.Header.Get("X-RateLimit-Reset"))
		}
		return n
	}
	before := time.Now().Unix()
	st, r := s.OpenStream("/api/v1/events", ada)
	if st == nil {
		t.Fatalf("the first stream: %d %s", r.Status, r.Body)
	}
	// One open of a 60/min budget: full again in a second.
	if r.Header.Get("X-RateLimit-Limit") != "60" || r.Header.Get("X-RateLimit-Remaining") != "19" {
		t.Fatalf("admitted: X-RateLimit-Limit %q Remaining %q; want the open budget's, 60 and 19", r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
	}
	if got := reset(r); got < before+1 || got > time.Now().Unix()+2 {
		t.Fatalf("admitted: X-RateLimit-Reset %d; want when the open budget is full again, in [%d, %d]", got, before+1, time.Now().Unix()+2)
	}
	for range 15 {
		if st, r := s.OpenStream("/api/v1/events", ada); st == nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	before = time.Now().Unix()
	_, r = s.OpenStream("/api/v1/events", ada) // the 17th: the cap refuses
	if r.Status != 429 || r.Header.Get("Retry-After") != "7" || r.Header.Get("X-RateLimit-Limit") != "16" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("the cap's refusal: %d %v", r.Status, r.Header)
	}
	if got := reset(r); got < before+7 || got > time.Now().Unix()+8 {
		t.Fatalf("the cap's refusal: X-RateLimit-Reset %d; want when its Retry-After ends, in [%d, %d]", got, before+7, time.Now().Unix()+8)
	}
}
