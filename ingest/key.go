package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// Key returns the idempotency key of an ingest request's body, raw as
// received, or [Parse]'s error. The fingerprint is the SHA-256 (lowercase
// hex) of the RFC 8785 canonical JSON of the body without its ingest_id;
// the ingest_id is the body's own, or else the fingerprint. A client
// computes the same with any RFC 8785 library.
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

// key is the key of batch b, which parse read with what each item sent.
// A valid batch holds only known members, arrays and strings, so its
// canonical form is written from b and sent, members in name order,
// straight into the hash.
func key(b Batch, sent []sentItem) batchKey {
	h := hashWriter{h: sha256.New()}
	writeCanonical(&h, b, sent)
	fp := hex.EncodeToString(h.sum())
	if b.IngestID != "" {
		return batchKey{ingestID: b.IngestID, fingerprint: fp}
	}
	return batchKey{ingestID: fp, fingerprint: fp}
}

// writeCanonical writes the RFC 8785 canonical form of batch b, without
// its ingest_id, to w (see key).
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
		if it.Skill != "" { // a valid batch has no empty skill
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

// A jsonWriter is where JSON is written: a strings.Builder, a hash, or a
// counter of bytes.
type jsonWriter interface {
	io.StringWriter
	io.ByteWriter
}

// writeString writes s, valid UTF-8, as a JSON string the way RFC 8785
// writes strings: '"' and '\' escaped with a backslash, control
// characters as \b, \t, \n, \f, \r or \u00xx (lowercase hex), every other
// character as it is.
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

// A hashWriter feeds a hash through a buffer, so that the many small
// writes of a canonical form cost one call of the hash per 4 KiB.
type hashWriter struct {
	h   hash.Hash
	buf [4096]byte
	n   int
}

func (w *hashWriter) WriteString(s string) (int, error) {
	written := len(s)
	for len(s) > 0 {
		if w.n == len(w.buf) {
			w.flush()
		}
		c := copy(w.buf[w.n:], s)
		w.n += c
		s = s[c:]
	}
	return written, nil
}

func (w *hashWriter) WriteByte(c byte) error {
	if w.n == len(w.buf) {
		w.flush()
	}
	w.buf[w.n] = c
	w.n++
	return nil
}

func (w *hashWriter) flush() {
	w.h.Write(w.buf[:w.n])
	w.n = 0
}

// sum is the hash of everything written.
func (w *hashWriter) sum() []byte {
	w.flush()
	return w.h.Sum(nil)
}

// ingestIDRule is what a well-formed ingest_id is, as a message.
const ingestIDRule = "must be 64 lowercase hex digits (a SHA-256); leave it out to have one derived from the body"

// isHex64 reports whether s is 64 lowercase hex digits.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
