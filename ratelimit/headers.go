package ratelimit

import (
	"net/http"
	"strconv"
	"time"
)

// Headers writes a policy's rate-limit headers: RateLimit and
// RateLimit-Policy as draft-ietf-httpapi-ratelimit-headers-10 defines them,
// one list item per budget, and the legacy X-RateLimit-Limit, -Remaining and
// -Reset for the budget with the fewest tokens left. What is constant per
// policy is built once, by [NewHeaders]; writing costs two allocations.
type Headers struct {
	policy []string   // RateLimit-Policy: "session";q=120;w=60
	names  []string   // `"session";r=` per budget
	limits [][]string // X-RateLimit-Limit per budget
}

// NewHeaders precomputes the headers of p.
func NewHeaders(p Policy) *Headers {
	h := &Headers{names: make([]string, len(p.Limits)), limits: make([][]string, len(p.Limits))}
	var pol []byte
	for i, l := range p.Limits {
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
	var remStart, remEnd int // X-RateLimit-Remaining is budget t's r= in RateLimit
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

// WriteConcurrent sets the headers of a cap on concurrent requests (the
// stream plane's): policy's capacity, with left of them free. Its
// RateLimit-Policy says qu="concurrent-requests". X-RateLimit-Reset is
// now: a slot frees when some request ends, which no clock predicts.
func WriteConcurrent(hdr http.Header, policy string, capacity, left int, now time.Time) {
	c, l := strconv.Itoa(capacity), strconv.Itoa(left)
	hdr[keyRateLimitPolicy] = []string{`"` + policy + `";q=` + c + `;qu="concurrent-requests"`}
	hdr[keyRateLimit] = []string{`"` + policy + `";r=` + l}
	hdr[keyLimit] = []string{c}
	hdr[keyRemaining] = []string{l}
	hdr[keyReset] = []string{strconv.FormatInt(now.Unix(), 10)}
}
