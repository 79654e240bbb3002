package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// DefaultArgon2 is OWASP's minimum for argon2id: 19 MiB, two passes, one
// thread, about 20-40 ms on one core.
var DefaultArgon2 = Argon2Params{Memory: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

var b64 = base64.RawStdEncoding

// HashPassword hashes pw with argon2id and a random salt, in the PHC string
// form: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>.
func HashPassword(pw string, p Argon2Params) string {
	salt := make([]byte, p.SaltLen)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("auth: not an argon2id hash")

// verifyPassword reports whether pw matches encoded, in constant time.
func verifyPassword(pw, encoded string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false, errBadHash
	}
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// hashSlots bounds the password hashes that run at once, each holding its
// Memory and a core. A hash whose login failed recently waits behind the
// others: a freed slot is handed on first to a waiting hash of the others.
type hashSlots struct {
	taken chan struct{} // one value per slot in use
	first chan struct{} // a slot handed from one hash to a waiting first one
}

func newHashSlots(n int) hashSlots {
	return hashSlots{taken: make(chan struct{}, n), first: make(chan struct{})}
}

// run runs f in a slot, waiting at most wait (then ErrBusy), or as long as
// ctx allows when wait is negative. When last, it takes no handed slot.
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

// free hands the slot to a hash that waits for it first, or frees it.
func (h hashSlots) free() {
	select {
	case h.first <- struct{}{}:
	default:
		<-h.taken
	}
}

// KeyPrefix starts every API key, so secret scanners and people can tell
// one when they see it.
const KeyPrefix = "brk_"

// random returns n random bytes.
func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// newToken returns a session token: 256 random bits, URL-safe.
func newToken() string { return base64.RawURLEncoding.EncodeToString(random(32)) }

// newAPIKey returns brk_ and 192 random bits.
func newAPIKey() string { return KeyPrefix + base64.RawURLEncoding.EncodeToString(random(24)) }

// newID returns a random 128-bit id in hex.
func newID() string { return hex.EncodeToString(random(16)) }

// hashSecret is what is stored of a token or key: its SHA-256, in hex
// (the secrets are random and long).
func hashSecret(secret string) string {
	var buf [64]byte // keys and tokens fit: no allocation for the bytes hashed
	sum := sha256.Sum256(append(buf[:0], secret...))
	var text [2 * sha256.Size]byte // one allocation, the string's: EncodeToString makes two
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// looksLikeKey reports whether s has the shape of an API key.
func looksLikeKey(s string) bool {
	return strings.HasPrefix(s, KeyPrefix) && len(s) == len(KeyPrefix)+32
}

// looksLikeToken reports whether s has the shape of a session token.
func looksLikeToken(s string) bool { return len(s) == 43 }
