package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// KeyPrefix starts every API key, so secret scanners and people can tell
// one when they see it.
const KeyPrefix = "brk_"

// newToken returns 256 random bits, URL-safe: a session token.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newAPIKey returns brk_ and 192 random bits.
func newAPIKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// newID returns a random 128-bit id in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hashSecret is what is stored of a token or key: its SHA-256, in hex. The
// secrets are random and long, so a fast hash suffices; lookups by hash are
// indexed equality, so their timing tells nothing about the secret.
func hashSecret(secret string) string {
	var buf [64]byte // keys and tokens fit: no allocation for the bytes hashed
	sum := sha256.Sum256(append(buf[:0], secret...))
	var text [2 * sha256.Size]byte // one allocation, the string's: EncodeToString makes two
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// looksLikeKey reports whether s has the shape of an API key, so garbage
// never reaches the database.
func looksLikeKey(s string) bool {
	return strings.HasPrefix(s, KeyPrefix) && len(s) == len(KeyPrefix)+32
}

// looksLikeToken reports whether s has the shape of a session token.
func looksLikeToken(s string) bool { return len(s) == 43 }
