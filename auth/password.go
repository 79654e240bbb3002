package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the cost of one argon2id password hash.
type Argon2Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
	KeyLen  uint32
	SaltLen uint32
}

// DefaultArgon2 is OWASP's minimum for argon2id: 19 MiB, two passes.
var DefaultArgon2 = Argon2Params{Memory: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

var b64 = base64.RawStdEncoding

// HashPassword hashes pw with argon2id and a random salt, in PHC form.
func HashPassword(pw string, p Argon2Params) string {
	salt := make([]byte, p.SaltLen)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verifyPassword reports whether pw hashes to encoded, false when encoded is
// no argon2id hash in PHC form.
func verifyPassword(pw, encoded string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var p Argon2Params
	_, err := fmt.Sscanf(parts[2]+" "+parts[3], "v=%d m=%d,t=%d,p=%d", &version, &p.Memory, &p.Time, &p.Threads)
	if err != nil || version != argon2.Version {
		return false
	}
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// hashSlots bounds the password hashes that run at once. A hash whose
// login failed recently waits behind the others.
type hashSlots struct {
	taken chan struct{} // one value per slot in use
	first chan struct{} // a slot handed on to a waiting first-class hash
}

func newHashSlots(n int) hashSlots {
	return hashSlots{taken: make(chan struct{}, n), first: make(chan struct{})}
}

// run runs f in a slot, waiting at most wait (forever when negative).
func (h hashSlots) run(ctx context.Context, wait time.Duration, last bool, f func()) error {
	select {
	case h.taken <- struct{}{}:
	default:
		var expired <-chan time.Time
		if wait >= 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			expired = t.C
		}
		handed := h.first
		if last {
			handed = nil
		}
		select {
		case h.taken <- struct{}{}:
		case <-handed:
		case <-expired:
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer h.free()
	f()
	return nil
}

func (h hashSlots) free() {
	select {
	case h.first <- struct{}{}:
	default:
		<-h.taken
	}
}

// KeyPrefix starts every API key, for secret scanners and people.
const KeyPrefix = "brk_"

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func newToken() string  { return base64.RawURLEncoding.EncodeToString(random(32)) }
func newAPIKey() string { return KeyPrefix + base64.RawURLEncoding.EncodeToString(random(24)) }
func newID() string     { return hex.EncodeToString(random(16)) }

// hashSecret is what is stored of a token or key: its SHA-256, in hex.
func hashSecret(secret string) string {
	var buf [64]byte // no allocation for the bytes hashed
	sum := sha256.Sum256(append(buf[:0], secret...))
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

func looksLikeKey(s string) bool {
	return strings.HasPrefix(s, KeyPrefix) && len(s) == len(KeyPrefix)+32
}

func looksLikeToken(s string) bool { return len(s) == 43 }
