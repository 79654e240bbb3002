// Runnable examples of the limiter a fork reuses: a keyed budget of two
// rates, decided in memory with a clock passed in.

package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// A budget of two rates on one key, 10 a second and 100 an hour: a
// request passes only if both have a token, and a refused one takes
// none. The clock is passed in (Memory.Now), so the example moves time
// instead of sleeping.
func ExampleMemory() {
	rates, err := ratelimit.ParseRates("10/s; 100/h") // the configuration's syntax
	if err != nil {
		panic(err)
	}
	uploads := ratelimit.Budget{Name: "uploads", Limits: []ratelimit.Limit{
		{Name: "uploads-second", Rate: rates[0]},
		{Name: "uploads-hour", Rate: rates[1]},
	}}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := ratelimit.NewMemory(uploads, ratelimit.MemoryOptions{})
	m.Now = func() time.Time { return now }

	allow := func(key string) ratelimit.Decision {
		d, _ := m.Allow(context.Background(), key) // Memory never fails
		return d
	}
	refusedBy := func(d ratelimit.Decision) []string {
		var names []string
		for i := range int(d.N) {
			if d.Refused(i) {
				names = append(names, uploads.Limits[i].Name)
			}
		}
		return names
	}

	// A burst of ten passes; the eleventh at the same instant does not.
	passed := 0
	for range 11 {
		if d := allow("alice"); d.Allowed {
			passed++
		} else {
			fmt.Println("passed", passed, "then refused by", refusedBy(d), "for", d.RetryAfter)
		}
	}
	// Each key has buckets of its own.
	fmt.Println("bob allowed:", allow("bob").Allowed)

	// Ten a second for nine more seconds: within the per-second rate, but
	// the hour's 100 are spent.
	for range 9 {
		now = now.Add(time.Second)
		for range 10 {
			if allow("alice").Allowed {
				passed++
			}
		}
	}
	now = now.Add(time.Second)
	d := allow("alice")
	fmt.Println("passed", passed, "then refused by", refusedBy(d), "for", d.RetryAfter)

	// What a 429 says about it.
	h := http.Header{}
	ratelimit.NewHeaders(uploads).Write(h, &d)
	for _, k := range []string{"RateLimit-Policy", "RateLimit", "Retry-After"} {
		fmt.Printf("%s: %s\n", k, h.Get(k))
	}
	// Output:
	// passed 10 then refused by [uploads-second] for 100ms
	// bob allowed: true
	// passed 100 then refused by [uploads-hour] for 26s
	// RateLimit-Policy: "uploads-second";q=10;w=1, "uploads-hour";q=100;w=3600
	// RateLimit: "uploads-second";r=10;t=0, "uploads-hour";r=0;t=3590
	// Retry-After: 26
}
