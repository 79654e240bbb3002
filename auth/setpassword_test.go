package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-template/brain/auth"
)

func TestSetPasswordEndsEverySession(t *testing.T) {
	svc, _, _ := mustService(t)
	ctx := context.Background()
	a, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	b, _, _, _ := svc.Login(ctx, "ada", "correct horse battery", "ip")
	for _, token := range []string{a, b} { // both cached on this replica
		if _, err := svc.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.SetPassword(ctx, "ada", "short"); !errors.Is(err, auth.ErrWeakPassword) {
		t.Fatalf("a short password: err = %v, want ErrWeakPassword", err)
	}
	if err := svc.SetPassword(ctx, "nobody", "a new long passphrase"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("an unknown user: err = %v, want ErrNotFound", err)
	}
	if err := svc.SetPassword(ctx, " ADA ", "a new long passphrase"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{a, b} {
		if _, err := svc.Authenticate(ctx, token); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("a session after SetPassword: err = %v, want it ended", err)
		}
	}
	if _, _, _, err := svc.Login(ctx, "ada", "correct horse battery", "ip"); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Fatalf("the old password: err = %v, want ErrInvalidCredentials", err)
	}
	if _, _, _, err := svc.Login(ctx, "ada", "a new long passphrase", "ip"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
}
