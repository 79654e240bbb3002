package ingest

import (
	"crypto/sha256"
	"sync"
)

// keyCache remembers the keys of bodies seen lately, by the SHA-256 of
// their bytes: a client that retries sends the same bytes, and hashing
// them costs a fraction of canonicalizing them (Key). It maps bytes to
// what Key computes from them, which depends on nothing else, so an
// entry is never stale, whoever sent it.
//
// It holds at most 2 × size entries: when the current generation is
// full it becomes the old one, and the old one is dropped. A body found
// in the old generation moves to the current.
type keyCache struct {
	size     int
	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]cachedKey
}

type cachedKey struct{ ingestID, fingerprint string }

// keyCacheSize is how many keys a generation of the Service's cache
// holds: about 200 bytes each.
const keyCacheSize = 4096

func newKeyCache(size int) *keyCache {
	return &keyCache{size: size, cur: make(map[[sha256.Size]byte]cachedKey)}
}

// key is Key(raw), from the cache when raw was seen lately.
func (c *keyCache) key(raw []byte) (ingestID, fingerprint string, err error) {
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	k, ok := c.cur[sum]
	if !ok {
		if k, ok = c.old[sum]; ok {
			c.putLocked(sum, k)
		}
	}
	c.mu.Unlock()
	if ok {
		return k.ingestID, k.fingerprint, nil
	}
	if ingestID, fingerprint, err = Key(raw); err != nil {
		return "", "", err
	}
	c.mu.Lock()
	c.putLocked(sum, cachedKey{ingestID, fingerprint})
	c.mu.Unlock()
	return ingestID, fingerprint, nil
}

func (c *keyCache) putLocked(sum [sha256.Size]byte, k cachedKey) {
	if len(c.cur) >= c.size {
		c.old, c.cur = c.cur, make(map[[sha256.Size]byte]cachedKey, c.size)
	}
	c.cur[sum] = k
}
