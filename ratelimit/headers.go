package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers writes a budget's rate-limit headers: RateLimit and
// RateLimit-Policy as draft-ietf-httpapi-ratelimit-headers-10 defines them,
// one list item per rate, and the legacy X-RateLimit-Limit, -Remaining and
// -Reset for the rate with the fewest tokens left. What is constant per
// budget is built once, by [NewHeaders]; writing costs two allocations.
type Headers struct {
	policy []string   // RateLimit-Policy: "session";q=120;w=60
	names  []string   // `"session";r=` per rate
	limits [][]string // X-RateLimit-Limit per rate
}

// NewHeaders precomputes the headers of b.
func NewHeaders(b Budget) *Headers {
	h := &Headers{names: make([]string, len(b.Limits)), limits: make([][]string, len(b.Limits))}
	var pol []byte
	for i, l := range b.Limits {
		if i > 0 {
			pol = append(pol, ", "...)
		}
		pol = append(pol, '"')
		pol = append(pol, l.Name...)
		pol = append(pol, `";q=`...)
		pol = strconv.AppendInt(pol, int64(l.Limit), 10)
		pol = append(pol, ";w="...)
		pol = strconv.AppendInt(pol, int64(l.Window/time.Second), 10)
		h.names[i] = `"` + l.Name + `";r=`
		h.limits[i] = []string{strconv.Itoa(l.Limit)}
	}
	h.policy = []string{string(pol)}
	return h
}

// The headers [Headers.Write] sets, as the spec and the drafts spell them.
const (
	HeaderRateLimit       = "RateLimit"
	HeaderRateLimitPolicy = "RateLimit-Policy"
	HeaderLimit           = "X-RateLimit-Limit"
	HeaderRemaining       = "X-RateLimit-Remaining"
	HeaderReset           = "X-RateLimit-Reset"
	HeaderRetryAfter      = "Retry-After"
)

// HeaderNames lists the headers on every response a limiter decided,
// in the order the spec declares them; a refusal adds HeaderRetryAfter.
// It is the one list the server, the spec, CORS and the breaking-change
// check share.
var HeaderNames = []string{HeaderRateLimit, HeaderRateLimitPolicy, HeaderLimit, HeaderRemaining, HeaderReset}

// Their canonical forms, the keys of an http.Header, so writes need no
// canonicalization.
var (
	keyRateLimit       = http.CanonicalHeaderKey(HeaderRateLimit)
	keyRateLimitPolicy = http.CanonicalHeaderKey(HeaderRateLimitPolicy)
	keyLimit           = http.CanonicalHeaderKey(HeaderLimit)
	keyRemaining       = http.CanonicalHeaderKey(HeaderRemaining)
	keyReset           = http.CanonicalHeaderKey(HeaderReset)
	keyRetryAfter      = http.CanonicalHeaderKey(HeaderRetryAfter)
)

// Write sets the headers for decision d on hdr, and Retry-After when d
// refused the request. X-RateLimit-Reset counts from the decision's time.
//
// The values that never change (RateLimit-Policy, X-RateLimit-Limit) are
// shared by every response, so callers must not modify them in place; the
// others are slices of one string.
func (h *Headers) Write(hdr http.Header, d *Decision) {
	var rem [MaxLimits]int
	for i := range int(d.N) {
		rem[i] = d.Remaining(i)
	}
	t := d.tightest(&rem)
	var buf [256]byte
	b := buf[:0]
	var remStart, remEnd int // X-RateLimit-Remaining is rate t's r= in RateLimit
	for i := range int(d.N) {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, h.names[i]...)
		if i == t {
			remStart = len(b)
		}
		b = strconv.AppendInt(b, int64(rem[i]), 10)
		if i == t {
			remEnd = len(b)
		}
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, ceilSeconds(d.Reset(i)), 10)
	}
	rl := len(b)
	b = strconv.AppendInt(b, (d.at+int64(d.Reset(t))+int64(time.Second)-1)/int64(time.Second), 10)
	reset := len(b)
	if !d.Allowed {
		b = strconv.AppendInt(b, RetryAfterSeconds(d.RetryAfter), 10)
	}
	s := string(b)
	vals := make([]string, 4)
	vals[0], vals[1], vals[2] = s[:rl], s[remStart:remEnd], s[rl:reset]
	hdr[keyRateLimit] = vals[0:1:1]
	hdr[keyRemaining] = vals[1:2:2]
	hdr[keyReset] = vals[2:3:3]
	hdr[keyLimit] = h.limits[t]
	hdr[keyRateLimitPolicy] = h.policy
	if !d.Allowed {
		vals[3] = s[reset:]
		hdr[keyRetryAfter] = vals[3:4:4]
	}
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1: what
// Retry-After says.
func RetryAfterSeconds(d time.Duration) int64 { return max(ceilSeconds(d), 1) }

func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// A Concurrency is a cap on requests in flight at once, such as the stream
// plane's caps on open streams: its name, as the headers call it, and its
// capacity.
type Concurrency struct {
	Name     string
	Capacity int
}

// CapHeaders writes the rate-limit headers of responses that caps on
// concurrent requests decide first and, once they all admit the request,
// budgets' rates: the stream plane's caps on open streams, then its open
// budgets. Each cap is one item: RateLimit-Policy says
// qu="concurrent-requests" and RateLimit gives the free slots, without a
// reset (a slot frees when some request ends, which no clock predicts).
// The legacy X-RateLimit-* describe a rate, whose reset is a time: a
// budget's, whenever one was decided. Create it with [NewCapHeaders]; it
// is safe for concurrent use.
type CapHeaders struct {
	caps       []Concurrency
	names      []string // `"streams";r=` per cap
	limits     [][]string
	budgets    []*Headers
	policy     []string // RateLimit-Policy: every cap's item, then every budget's
	retryAfter time.Duration
}

// NewCapHeaders precomputes the headers of caps, decided in that order,
// then of budgets, in theirs. retryAfter is the Retry-After of a cap's
// refusal: the legacy X-RateLimit-Reset of a response no budget decided
// is when it ends.
func NewCapHeaders(budgets []Budget, retryAfter time.Duration, caps ...Concurrency) *CapHeaders {
	c := &CapHeaders{caps: caps, retryAfter: retryAfter}
	var items []string
	for _, cp := range caps {
		n := strconv.Itoa(cp.Capacity)
		items = append(items, `"`+cp.Name+`";q=`+n+`;qu="concurrent-requests"`)
		c.names = append(c.names, `"`+cp.Name+`";r=`)
		c.limits = append(c.limits, []string{n})
	}
	for _, b := range budgets {
		h := NewHeaders(b)
		c.budgets = append(c.budgets, h)
		items = append(items, h.policy[0])
	}
	c.policy = []string{strings.Join(items, ", ")}
	return c
}

// Write sets the headers of a response at now. free holds the free slots
// of the first len(free) caps, those that were decided (a cap that
// refused has 0); ds the decisions of the first len(ds) budgets, made once
// every cap admitted (a budget that refused is the last). The legacy
// X-RateLimit-* describe, whenever a budget was decided, the rate that
// refused, else the one with the fewest requests left; otherwise (a cap
// refused, or there is no budget) the cap with the fewest slots free, the
// refusing one, whose X-RateLimit-Reset is when the refusal's Retry-After
// ends. Nothing decided (a store failed first), nothing is written.
// Retry-After is the refusal's to set.
func (c *CapHeaders) Write(hdr http.Header, free []int, ds []Decision, now time.Time) {
	var buf [256]byte
	b := buf[:0]
	legacy := -1 // the cap X-RateLimit-* describe
	left := 0
	for i, n := range free {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, c.names[i]...)
		b = strconv.AppendInt(b, int64(n), 10)
		if legacy < 0 || n < left {
			legacy, left = i, n
		}
	}
	limit := []string(nil)
	reset := (now.UnixNano() + RetryAfterSeconds(c.retryAfter)*int64(time.Second) + int64(time.Second) - 1) / int64(time.Second)
	if legacy >= 0 {
		limit = c.limits[legacy]
	}
	rated := false // a budget's rate is described
	for j := range ds {
		d := &ds[j]
		if d.N == 0 {
			continue // the store is down and the mode open: no rate to show
		}
		var rem [MaxLimits]int
		for i := range int(d.N) {
			rem[i] = d.Remaining(i)
		}
		t := d.tightest(&rem)
		for i := range int(d.N) {
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, c.budgets[j].names[i]...)
			b = strconv.AppendInt(b, int64(rem[i]), 10)
			b = append(b, ";t="...)
			b = strconv.AppendInt(b, ceilSeconds(d.Reset(i)), 10)
		}
		if !rated || !d.Allowed || rem[t] < left {
			rated, left, limit = true, rem[t], c.budgets[j].limits[t]
			reset = (d.at + int64(d.Reset(t)) + int64(time.Second) - 1) / int64(time.Second)
		}
	}
	if len(b) == 0 {
		return
	}
	hdr[keyRateLimitPolicy] = c.policy
	hdr[keyRateLimit] = []string{string(b)}
	hdr[keyLimit] = limit
	hdr[keyRemaining] = []string{strconv.Itoa(left)}
	hdr[keyReset] = []string{strconv.FormatInt(reset, 10)}
}
