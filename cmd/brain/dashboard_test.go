package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The binary serves the build it embeds at / (the dashboard, or the page
// saying how to build it) and keeps /api/ the API's.
func TestServeDashboard(t *testing.T) {
	base, _ := MustRunServer(t, nil)
	site, err := dashboard()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string, string) {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	code, ct, body := get("/")
	if code != 200 || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET / = %d %q", code, ct)
	}
	if !site.Built() && !strings.Contains(body, "make web") {
		t.Errorf("GET / without a build is not the page saying how to build it:\n%s", body)
	}
	if code, ct, _ := get("/docs"); code != 200 || !strings.HasPrefix(ct, "text/html") {
		t.Errorf("GET /docs = %d %q", code, ct)
	}
	if code, ct, _ := get("/api/v1/nope"); code != 404 || ct != "application/json" {
		t.Errorf("GET /api/v1/nope = %d %q, want the 404 envelope", code, ct)
	}
}
