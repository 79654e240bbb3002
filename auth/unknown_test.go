package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
)

// Made-up credentials cost one store lookup per CacheTTL, not one per
// request, and a new key is never refused for having been guessed.
func TestUnknownCredentialsAreCached(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	key := "brk_" + strings.Repeat("x", 32)
	token := strings.Repeat("t", 43)
	for range 5 {
		if _, err := svc.AuthenticateKey(ctx, key); err != auth.ErrUnauthenticated {
			t.Fatalf("AuthenticateKey(made up) = %v", err)
		}
		if _, err := svc.Authenticate(ctx, token); err != auth.ErrUnauthenticated {
			t.Fatalf("Authenticate(made up) = %v", err)
		}
	}
	if k, s := st.keyLookups.Load(), st.sessionLookups.Load(); k != 1 || s != 1 {
		t.Fatalf("%d key and %d session lookups for 5 tries each, want 1 each", k, s)
	}
	clk.Advance(svc.Config().CacheTTL)
	if _, err := svc.AuthenticateKey(ctx, key); err != auth.ErrUnauthenticated {
		t.Fatal(err)
	}
	if k := st.keyLookups.Load(); k != 2 {
		t.Fatalf("%d key lookups: after CacheTTL the store is asked again", k)
	}
}

// Under WithoutLookup only credentials this replica has seen valid are
// looked up: a cached caller passes, one whose entry went stale is looked
// up again, and one never seen gets ErrNotCached without a lookup.
func TestWithoutLookup(t *testing.T) {
	svc, st, clk := mustService(t)
	ctx := context.Background()
	token, _, u, err := svc.Login(ctx, "ada", "correct horse battery", "ip") // cached by the login
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AuthenticateKey(ctx, key); err != nil { // cached now
		t.Fatal(err)
	}
	keys, sessions := st.keyLookups.Load(), st.sessionLookups.Load()
	nl := auth.WithoutLookup(ctx)
	if id, err := svc.AuthenticateKey(nl, key); err != nil || id.User.ID != u.ID {
		t.Fatalf("cached key without lookup: %v %v", id, err)
	}
	if id, err := svc.Authenticate(nl, token); err != nil || id.User.ID != u.ID {
		t.Fatalf("cached session without lookup: %v %v", id, err)
	}
	if _, err := svc.AuthenticateKey(nl, "brk_"+strings.Repeat("y", 32)); !errors.Is(err, auth.ErrNotCached) {
		t.Fatalf("unseen key without lookup = %v, want ErrNotCached", err)
	}
	if k, s := st.keyLookups.Load(), st.sessionLookups.Load(); k != keys || s != sessions {
		t.Fatalf("the store was asked under WithoutLookup (%d→%d keys, %d→%d sessions)", keys, k, sessions, s)
	}
	clk.Advance(svc.Config().CacheTTL + time.Second) // the cache entries are stale
	if id, err := svc.Authenticate(nl, token); err != nil || id.User.ID != u.ID {
		t.Fatalf("stale session without lookup: %v %v, want it looked up", id, err)
	}
	if id, err := svc.AuthenticateKey(nl, key); err != nil || id.User.ID != u.ID {
		t.Fatalf("stale key without lookup: %v %v, want it looked up", id, err)
	}
	if k, s := st.keyLookups.Load(), st.sessionLookups.Load(); k != keys+1 || s != sessions+1 {
		t.Fatalf("stale credentials: %d key and %d session lookups, want one each", k-keys, s-sessions)
	}
}
