package ratelimit

import (
	"sync/atomic"
	"time"
)

// The two clocks of [Memory], both as Unix nanoseconds.
//
// The default, monoUnixNano, reads the monotonic clock on every call: one
// read, about half the cost of time.Now (on the project machine 29 ns
// against 49), and immune to steps of the wall clock, so a step cannot
// empty or fill every bucket at once. The price: the one absolute time
// brain sends, X-RateLimit-Reset, is off by as much as the wall clock was
// stepped (or the machine suspended) since the process started.
//
// The coarse clock ([MemoryOptions].CoarseClock) is read from memory and
// refreshed every millisecond by a goroutine while anyone reads it; it
// stops after 100 ms without a reader, so an idle process pays nothing. A
// reading can be stale by about a millisecond (more if the scheduler
// delays the goroutine), far below the one-second resolution of
// Retry-After. It saves the clock read in tight loops, but its thousand
// wake-ups a second while busy cost more than they save in a server whose
// other cores are idle (BENCHMARKS.md), so brain's server does not use it.

var (
	clockBase     = time.Now()
	clockBaseUnix = clockBase.UnixNano()
)

// monoUnixNano returns the time as Unix nanoseconds, counted on the
// monotonic clock from the process's start.
func monoUnixNano() int64 { return clockBaseUnix + int64(time.Since(clockBase)) }

type coarseClock struct {
	nanos   atomic.Int64 // since clockBase
	running atomic.Bool
	read    atomic.Bool
}

var coarse = &coarseClock{}

const (
	coarseTick = time.Millisecond
	coarseIdle = 100 // ticks without a reader before the goroutine stops
)

// unixNano returns the time as Unix nanoseconds.
func (c *coarseClock) unixNano() int64 {
	if !c.read.Load() {
		c.read.Store(true)
	}
	if !c.running.Load() && c.running.CompareAndSwap(false, true) {
		c.nanos.Store(int64(time.Since(clockBase)))
		go c.tick()
	}
	return clockBaseUnix + c.nanos.Load()
}

func (c *coarseClock) tick() {
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	for idle := 0; ; {
		<-t.C
		c.nanos.Store(int64(time.Since(clockBase)))
		if c.read.Swap(false) {
			idle = 0
		} else if idle++; idle >= coarseIdle {
			c.running.Store(false)
			return
		}
	}
}
