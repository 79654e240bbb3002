package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers writes a budget's RateLimit and RateLimit-Policy headers
// (draft-ietf-httpapi-ratelimit-headers-10) and the legacy X-RateLimit-*.
type Headers struct{ c *CapHeaders }

// NewHeaders precomputes the headers of b.
func NewHeaders(b Budget) *Headers { return &Headers{NewCapHeaders([]Budget{b}, 0)} }

type rateHeaders struct {
	policy string     // RateLimit-Policy: "session";q=120;w=60
	names  []string   // `"session";r=` per rate
	limits [][]string // X-RateLimit-Limit per rate
}

func newRateHeaders(b Budget) rateHeaders {
	h := rateHeaders{names: make([]string, len(b.Limits)), limits: make([][]string, len(b.Limits))}
	pol := make([]string, len(b.Limits))
	for i, l := range b.Limits {
		pol[i] = fmt.Sprintf(`"%s";q=%d;w=%d`, l.Name, l.Limit, int64(l.Window/time.Second))
		h.names[i] = `"` + l.Name + `";r=`
		h.limits[i] = []string{strconv.Itoa(l.Limit)}
	}
	h.policy = strings.Join(pol, ", ")
	return h
}

// HeaderRetryAfter is the header of a refusal's wait.
const HeaderRetryAfter = "Retry-After"

// HeaderNames lists the headers on every response a limiter decided.
var HeaderNames = []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}

// Write sets the headers for d on hdr, and Retry-After when d refused.
// Some values are shared: callers must not modify them in place.
func (h *Headers) Write(hdr http.Header, d *Decision) {
	ds := [1]Decision{*d}
	h.c.Write(hdr, nil, ds[:], time.Time{})
	if !d.Allowed {
		hdr[HeaderRetryAfter] = []string{strconv.FormatInt(RetryAfterSeconds(d.RetryAfter), 10)}
	}
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int64 { return max(ceilSeconds(d), 1) }

func ceilSeconds(d time.Duration) int64 { return ceilUnix(int64(d)) }

func ceilUnix(ns int64) int64 { return (ns + int64(time.Second) - 1) / int64(time.Second) }

// A Concurrency is a named cap on requests in flight at once.
type Concurrency struct {
	Name     string
	Capacity int
}

// CapHeaders writes the rate-limit headers of caps on concurrent requests,
// then budgets' rates. Create it with [NewCapHeaders].
type CapHeaders struct {
	caps       []Concurrency
	names      []string // `"streams";r=` per cap
	limits     [][]string
	budgets    []rateHeaders
	policy     []string // RateLimit-Policy: every cap's item, then every budget's
	retryAfter time.Duration
}

// NewCapHeaders precomputes the headers; retryAfter is a cap's refusal's.
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
		h := newRateHeaders(b)
		c.budgets = append(c.budgets, h)
		items = append(items, h.policy)
	}
	c.policy = []string{strings.Join(items, ", ")}
	return c
}

// Write sets the headers for the caps' free slots and the budgets' ds.
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
	reset := ceilUnix(now.UnixNano() + RetryAfterSeconds(c.retryAfter)*int64(time.Second))
	if legacy >= 0 {
		limit = c.limits[legacy]
	}
	rated := false // a budget's rate is described
	for j := range ds {
		d := &ds[j]
		if d.N == 0 {
			continue // the store is down and the mode open: no rate to show
		}
		rem, t := d.remaining()
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
			reset = ceilUnix(d.at + int64(d.Reset(t)))
		}
	}
	if len(b) == 0 {
		return
	}
	// One string and one slice hold the three values made here: a response's
	// allocations are most of what a request costs past its handler.
	rl := len(b)
	b = strconv.AppendInt(b, int64(left), 10)
	rem := len(b)
	b = strconv.AppendInt(b, reset, 10)
	v := string(b)
	vals := []string{v[:rl], v[rl:rem], v[rem:]}
	hdr["Ratelimit-Policy"] = c.policy // canonical forms
	hdr["Ratelimit"] = vals[0:1:1]
	hdr["X-Ratelimit-Limit"] = limit
	hdr["X-Ratelimit-Remaining"] = vals[1:2:2]
	hdr["X-Ratelimit-Reset"] = vals[2:3:3]
}
