// Package redistest connects tests to the real Redis named by
// BRAIN_TEST_REDIS_URL (skipped without it, but under CI=true). Each test
// isolates its keys with a [Prefix] of its own, deleted when the test ends.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

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

// Prefix returns a key prefix no other test uses, and deletes the keys
// holding it from the Redis at BRAIN_TEST_REDIS_URL when the test ends. It
// starts with BRAIN_TEST_REDIS_PREFIX ("brain-test:" when unset), so that
// a run can tell its keys apart (make bench-smoke).
func Prefix(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(product.EnvPrefix + "TEST_REDIS_PREFIX")
	if base == "" {
		base = product.Name + "-test:"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := base + hex.EncodeToString(b[:]) + ":"
	if url := os.Getenv(product.EnvPrefix + "TEST_REDIS_URL"); url != "" {
		tb.Cleanup(func() {
			if err := deleteKeys(url, prefix); err != nil && !tb.Skipped() {
				tb.Errorf("deleting the test's Redis keys (%s*): %v", prefix, err)
			}
		})
	}
	return prefix
}

// deleteKeys deletes every key holding prefix (a hash tag may wrap it).
func deleteKeys(url, prefix string) error {
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return err
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for cursor := uint64(0); ; {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match("*"+prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := c.Do(ctx, c.B().Del().Key(e.Elements...).Build()).Error(); err != nil {
				return err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}
