package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ratelimit"
)

// The legacy X-RateLimit-* of a stream describe its open budget, a token
// bucket whose reset is a time, never a cap (which has no clock): an
// admitted stream's reset is when the open budget is full again; a cap's
// refusal, which no budget decided, says the cap and, as its reset, when
// its Retry-After ends.
func TestStreamLegacyHeadersDescribeTheOpenBudget(t *testing.T) {
	_, l, _ := streamServerWith(t, api.Config{
		Streams: api.StreamConfig{RetryAfter: 7 * time.Second},
		Limits:  api.Limits{StreamOpens: ratelimit.Rate{Limit: 60, Window: time.Minute, Burst: 20}},
	}, nil)
	ada := l.login("ada", "correct horse battery").cookie(t)
	reset := func(r reply) int64 {
		n, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			t.Fatalf("X-RateLimit-Reset %q", r.header.Get("X-RateLimit-Reset"))
		}
		return n
	}
	before := time.Now().Unix()
	st, r := l.openStream("/api/v1/events", ada)
	if st == nil {
		t.Fatalf("the first stream: %d %s", r.status, r.body)
	}
	// One open of a 60/min budget: full again in a second.
	if r.header.Get("X-RateLimit-Limit") != "60" || r.header.Get("X-RateLimit-Remaining") != "19" {
		t.Fatalf("admitted: X-RateLimit-Limit %q Remaining %q; want the open budget's, 60 and 19", r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
	}
	if got := reset(r); got < before+1 || got > time.Now().Unix()+2 {
		t.Fatalf("admitted: X-RateLimit-Reset %d; want when the open budget is full again, in [%d, %d]", got, before+1, time.Now().Unix()+2)
	}
	for range 15 {
		if st, r := l.openStream("/api/v1/events", ada); st == nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	before = time.Now().Unix()
	_, r = l.openStream("/api/v1/events", ada) // the 17th: the cap refuses
	if r.status != 429 || r.header.Get("Retry-After") != "7" || r.header.Get("X-RateLimit-Limit") != "16" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("the cap's refusal: %d %v", r.status, r.header)
	}
	if got := reset(r); got < before+7 || got > time.Now().Unix()+8 {
		t.Fatalf("the cap's refusal: X-RateLimit-Reset %d; want when its Retry-After ends, in [%d, %d]", got, before+7, time.Now().Unix()+8)
	}
}
