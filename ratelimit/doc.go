// Package ratelimit decides whether a request may proceed under one or
// more token-bucket rates, per key.
//
// A [Budget] names up to [MaxLimits] rates decided together: a request
// passes only if every rate has a token, and a refused one takes none.
// Each rate keeps, per key, GCRA's theoretical arrival time (TAT); a key
// whose TAT has passed holds a full bucket and can be forgotten.
// [Memory] decides in-process, [Redis] across replicas, and [Resilient]
// puts a fallback behind Redis for outages.
package ratelimit
