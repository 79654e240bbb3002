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
// each costs and how long one event takes to reach them all. streamopens
// measures a client that reopens a stream in a loop: the opens admitted,
// the replays and job reads they cost, and the server's CPU, of two
// binaries interleaved. ingestflood measures first ingests and replays a
// second; ingestcost, the CPU and peak memory one ingest body of 8 MiB
// costs, costly to refuse or valid, and many of them at once. fairjobs
// measures how long one user's small ingest job waits behind another
// user's flood of large batches, before and after a change.
package bench
