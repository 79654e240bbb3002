package ingest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"sync"
)

// Key returns the idempotency key of an ingest request's body, or [Parse]'s
// error. The fingerprint is the SHA-256 (lowercase hex) of the RFC 8785
// canonical JSON of the body without its ingest_id, which defaults to it.
func Key(raw []byte) (ingestID, fingerprint string, err error) {
	b, sent, err := parse(raw)
	if err != nil {
		return "", "", err
	}
	k := key(b, sent)
	return k.ingestID, k.fingerprint, nil
}

// A batchKey is a batch's idempotency key.
type batchKey struct{ ingestID, fingerprint string }

// key is the key of batch b, which parse read with what each item sent;
// its canonical form is written straight into the hash.
func key(b Batch, sent []sentItem) batchKey {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 4096)
	writeCanonical(w, b, sent)
	w.Flush()
	fp := hex.EncodeToString(h.Sum(nil))
	if b.IngestID != "" {
		return batchKey{ingestID: b.IngestID, fingerprint: fp}
	}
	return batchKey{ingestID: fp, fingerprint: fp}
}

// writeCanonical writes the RFC 8785 form of batch b without its ingest_id.
func writeCanonical(w jsonWriter, b Batch, sent []sentItem) {
	w.WriteString(`{"items":[`)
	for i, it := range b.Items {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteByte('{')
		if sent[i].kind {
			w.WriteString(`"kind":`)
			writeString(w, it.Kind)
			w.WriteByte(',')
		}
		if sent[i].occurredAt != "" {
			w.WriteString(`"occurred_at":`)
			writeString(w, sent[i].occurredAt)
			w.WriteByte(',')
		}
		if it.Skill != "" {
			w.WriteString(`"skill":`)
			writeString(w, it.Skill)
			w.WriteByte(',')
		}
		if sent[i].tags {
			w.WriteString(`"tags":[`)
			for j, t := range it.Tags {
				if j > 0 {
					w.WriteByte(',')
				}
				writeString(w, t)
			}
			w.WriteString("],")
		}
		w.WriteString(`"text":`)
		writeString(w, it.Text)
		w.WriteByte('}')
	}
	w.WriteString(`],"project":`)
	writeString(w, b.Project)
	w.WriteByte('}')
}

// A jsonWriter is where JSON is written.
type jsonWriter interface {
	io.StringWriter
	io.ByteWriter
}

// writeString writes valid UTF-8 s as RFC 8785 writes a JSON string.
func writeString(w jsonWriter, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		w.WriteString(s[start:i])
		start = i + 1
		switch c {
		case '"', '\\':
			w.WriteByte('\\')
			w.WriteByte(c)
		case '\b':
			w.WriteString(`\b`)
		case '\t':
			w.WriteString(`\t`)
		case '\n':
			w.WriteString(`\n`)
		case '\f':
			w.WriteString(`\f`)
		case '\r':
			w.WriteString(`\r`)
		default:
			const hexDigits = "0123456789abcdef"
			w.WriteString(`\u00`)
			w.WriteByte(hexDigits[c>>4])
			w.WriteByte(hexDigits[c&0xf])
		}
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

const ingestIDRule = "must be 64 lowercase hex digits (a SHA-256); leave it out to have one derived from the body"

func isHex64(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 64 && err == nil && strings.ToLower(s) == s
}

// keyCache remembers the keys of valid batches sent lately by the SHA-256
// of their bytes, so a retry is not parsed again. It holds two generations
// of size entries; a hit in the old one moves to the current.
type keyCache struct {
	size     int
	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]batchKey
}

// keyCacheSize is how many keys (about 200 bytes each) a generation holds.
const keyCacheSize = 4096

func newKeyCache(size int) *keyCache {
	return &keyCache{size: size, cur: make(map[[sha256.Size]byte]batchKey)}
}

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
