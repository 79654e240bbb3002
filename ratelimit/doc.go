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
// Each rate is kept as GCRA keeps it: one number per key, the theoretical
// arrival time (TAT) at which the bucket would be full again. A key whose
// TAT has passed holds a full bucket and can be forgotten at any time.
//
// [Memory] decides in-process, without allocating, for a bounded number
// of keys. [Redis] decides in Redis for several replicas, batching
// concurrent decisions into one script call. [Resilient] puts a fallback
// behind Redis for outages.
package ratelimit
