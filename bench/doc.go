// Package bench measures brain beside its peers, in the same run: the
// in-memory limiter beside sethvargo/go-limiter, golang.org/x/time/rate and
// go-chi/httprate; the Redis limiter beside go-redis/redis_rate and
// httprate-redis. It is a module of its own, so a fork's go.mod carries
// only what the server uses. `make bench` runs it; `make test` compiles it.
// BENCHMARKS.md holds the figures.
//
// loginflood is a load test of the login path: it starts a brain binary,
// floods it with wrong-password logins and reports peak memory and
// latency. streamload is a load test of the stream plane: it starts a
// brain binary, opens thousands of event streams and reports the memory
// each costs and how long one event takes to reach them all. The other
// commands measure the example feature's operations; each says what in
// its package comment.
package bench
