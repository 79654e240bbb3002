package ratelimit

import (
	"sync/atomic"
	"time"
)

// coarse is a clock read from memory, for the default path of [Memory]:
// on the machines brain runs on, reading the system clock costs 25 to 50 ns,
// more than the rest of a decision. A goroutine refreshes it every
// millisecond while anyone reads it and stops after 100 ms without a
// reader, so an idle process pays nothing. A reading can be stale by about
// a millisecond (more if the scheduler delays the goroutine), which shifts
// a decision by that much: far below the one-second resolution of
// Retry-After.
type coarseClock struct {
	base    time.Time
	nanos   atomic.Int64 // since base
	running atomic.Bool
	read    atomic.Bool
}

var coarse = &coarseClock{base: time.Now()}

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
		c.nanos.Store(int64(time.Since(c.base)))
		go c.tick()
	}
	return c.base.UnixNano() + c.nanos.Load()
}

func (c *coarseClock) tick() {
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	for idle := 0; ; {
		<-t.C
		c.nanos.Store(int64(time.Since(c.base)))
		if c.read.Swap(false) {
			idle = 0
		} else if idle++; idle >= coarseIdle {
			c.running.Store(false)
			return
		}
	}
}
