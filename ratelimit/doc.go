// Package ratelimit decides whether a request may proceed under one or
// more token-bucket rates, per key.
//
// A [Budget] names up to [MaxLimits] rates decided together for one key
// space: a request passes only if every rate has a token, and a refused
// one takes none. Each rate is kept as GCRA keeps it: one number per key, the theoretical
// arrival time (TAT) at which the bucket would be full again. A key whose
// TAT has passed holds a full bucket and can be forgotten at any time.
//
// [Memory] decides in-process, without allocating, for a bounded number
// of keys. [Redis] decides in Redis for several replicas, batching
// concurrent decisions into one script call. [Resilient] puts a fallback
// behind Redis for outages.
package ratelimit
