// Package redistest connects tests to the real Redis named by
// BRAIN_TEST_REDIS_URL (skipped without it, but under CI=true). Each test
// isolates its keys with a [Prefix] of its own.
package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/rueidis"

	"github.com/brain-template/brain/internal/product"
)

// URL returns BRAIN_TEST_REDIS_URL, or skips (fails under CI=true).
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(product.EnvPrefix + "TEST_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal(product.EnvPrefix + "TEST_REDIS_URL is not set: CI must test Redis (.ci/run sets it)")
		}
		tb.Skip(product.EnvPrefix + "TEST_REDIS_URL is not set; skipping Redis")
	}
	return url
}

// Option returns client options for the test Redis, without client-side
// caching.
func Option(tb testing.TB) rueidis.ClientOption {
	tb.Helper()
	opt, err := rueidis.ParseURL(URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	opt.DisableCache = true
	return opt
}

// Client connects with opt and closes the client when the test ends.
func Client(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(opt)
	if err != nil {
		if os.Getenv("CI") != "true" {
			tb.Skipf("Redis at "+product.EnvPrefix+"TEST_REDIS_URL does not answer: %v", err)
		}
		tb.Fatalf("Redis at "+product.EnvPrefix+"TEST_REDIS_URL: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Prefix returns a key prefix no other test run uses.
func Prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return product.Name + "-test:" + hex.EncodeToString(b[:]) + ":"
}
