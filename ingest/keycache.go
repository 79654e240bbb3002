package ingest

import (
	"crypto/sha256"
	"sync"
)

// keyCache remembers the keys of valid batches sent lately, by the
// SHA-256 of their bytes: a retry sends the same bytes, and hashing them
// costs a fraction of parsing them. A key depends on the bytes alone, so
// an entry is never stale. It holds at most two generations of size
// entries; a hit in the old one moves to the current.
type keyCache struct {
	size     int
	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]batchKey
}

// keyCacheSize is how many keys a generation of the Service's cache
// holds: about 200 bytes each.
const keyCacheSize = 4096

func newKeyCache(size int) *keyCache {
	return &keyCache{size: size, cur: make(map[[sha256.Size]byte]batchKey)}
}

// get returns the key of the bytes whose SHA-256 is sum, if they were
// put lately.
func (c *keyCache) get(sum [sha256.Size]byte) (batchKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.cur[sum]
	if !ok {
		if k, ok = c.old[sum]; ok {
			c.putLocked(sum, k)
		}
	}
	return k, ok
}

// put remembers k as the key of the bytes whose SHA-256 is sum, which
// must have parsed as a valid batch.
func (c *keyCache) put(sum [sha256.Size]byte, k batchKey) {
	c.mu.Lock()
	c.putLocked(sum, k)
	c.mu.Unlock()
}

func (c *keyCache) putLocked(sum [sha256.Size]byte, k batchKey) {
	if len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[[sha256.Size]byte]batchKey, c.size)
	}
	c.cur[sum] = k
}
