// Package ratelimit decides whether a request may proceed under one or
// more token-bucket rates, per key.
//
// # Rates and budgets
//
// A [Rate] is a token bucket: Burst tokens of capacity, refilled at Limit
// per Window. A [Budget] names up to [MaxLimits] rates (each a [Limit]: a
// rate and the name the headers give it) that are decided
// together for one key space: a request passes only if every rate has a
// token, and a refused request takes a token from none of them. The
// apikey plane's budget of an operation may be 100/h AND 10/s.
//
// # The algorithm
//
// Each rate is kept as GCRA (the generic cell rate algorithm) keeps it: one
// number per key, the theoretical arrival time (TAT) at which the bucket
// would be full again. That is the same bucket as a lazily refilled one,
// in 8 bytes, with no float arithmetic. A key whose TAT has passed holds
// a full bucket and no information, so it can be forgotten at any time.
//
// # Stores
//
// [Memory] decides in-process: zero allocations per decision, one set of
// a set-associative table read per decision (128 bytes, two cache
// lines), a bounded number of keys (a key whose
// buckets are full again goes first, then the least recently used of its
// set), and time passed in ([Memory.AllowAt]) so tests never sleep.
// [Redis] decides in Redis, for several replicas: one round trip
// per decision (concurrent ones batched into one script call), the
// server's clock, keys that expire on their own, and a local deny cache. [Resilient] puts a fallback behind Redis for outages.
package ratelimit
