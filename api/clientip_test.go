package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/middleware"
	"github.com/brain-template/brain/ratelimit"
	"github.com/danielgtaylor/huma/v2"
)

// ipServer is the whole middleware chain with one operation that answers
// the address the per-IP plane and the login throttle key on. Requests
// carry ada's API key.
func ipServer(tb testing.TB, trusted ...string) http.Handler {
	tb.Helper()
	var prefixes []netip.Prefix
	for _, p := range trusted {
		prefixes = append(prefixes, netip.MustParsePrefix(p))
	}
	svc := MustAuth(tb)
	l := api.DefaultLimits() // a fuzzer sends more than a minute's budget
	l.APIKey = ratelimit.Rate{Limit: 1 << 30, Window: time.Second, Burst: 1 << 30}
	s, _ := mustRawServer(tb, api.Config{TrustedProxies: prefixes, Auth: svc, Limits: l})
	type out struct {
		Body struct {
			IP string `json:"ip"`
		}
	}
	huma.Register(s.API, huma.Operation{OperationID: "test-ip", Method: http.MethodGet, Path: "/api/v1/test/ip"},
		func(ctx context.Context, _ *struct{}) (*out, error) {
			o := &out{}
			o.Body.IP = middleware.GetClientIP(ctx)
			return o, nil
		})
	return withKey(tb, s, svc)
}

func clientIP(tb testing.TB, h http.Handler, peer string, xff []string) (int, string) {
	req := httptest.NewRequest("GET", "/api/v1/test/ip", nil)
	req.RemoteAddr = peer
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		name    string
		trusted []string
		peer    string
		xff     []string
		want    string
	}{
		{"untrusted_peer_ignores_xff", []string{"10.0.0.0/8"}, "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"no_trusted_proxies", nil, "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted_peer_rightmost_untrusted", []string{"10.0.0.0/8"}, "10.0.0.2:80", []string{"198.51.100.1, 198.51.100.2, 10.0.0.9"}, "198.51.100.2"},
		{"trusted_peer_never_leftmost", []string{"10.0.0.0/8"}, "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.2"}, "198.51.100.2"},
		// A trusted peer without X-Forwarded-For is the client itself, not
		// one shared empty address.
		{"trusted_peer_without_xff", []string{"127.0.0.0/8"}, "127.0.0.5:80", nil, "127.0.0.5"},
		{"trusted_peer_blank_xff", []string{"127.0.0.0/8"}, "127.0.0.6:80", []string{" , "}, "127.0.0.6"},
		// Where chi finds no untrusted address, never the shared empty one.
		{"trusted_peer_garbage_xff", []string{"127.0.0.0/8"}, "127.0.0.7:80", []string{"unknown"}, "127.0.0.7"},
		{"trusted_hops_only", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"127.0.0.50, 127.0.0.9"}, "127.0.0.50"},
		{"xff_with_port", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"10.0.0.1:443"}, "10.0.0.1"},
		{"xff_v6_with_port", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ipServer(t, tc.trusted...)
			code, body := clientIP(t, h, tc.peer, tc.xff)
			if code != 200 || body != `{"ip":"`+tc.want+`"}`+"\n" {
				t.Fatalf("got %d %s, want ip %s", code, body, tc.want)
			}
		})
	}
}

// FuzzForwardedFor: whatever an untrusted peer puts in X-Forwarded-For, the
// address the planes key on is the peer's, and the request never fails.
func FuzzForwardedFor(f *testing.F) {
	for _, seed := range []string{"", "1.2.3.4", "1.2.3.4, 10.0.0.1", "garbage", "::1", "[::1]:80", "10.0.0.1,,,", "unknown, 999.1.1.1",
		"\x00\xff", "2001:db8::1%eth0", "::ffff:10.0.0.1", "1.2.3.4:80, 5.6.7.8", " , ,"} {
		f.Add(seed)
	}
	h := ipServer(f, "10.0.0.0/8", "::1/128")
	f.Fuzz(func(t *testing.T, xff string) {
		code, body := clientIP(t, h, "203.0.113.7:5555", []string{xff})
		if code != 200 || body != `{"ip":"203.0.113.7"}`+"\n" {
			t.Fatalf("X-Forwarded-For %q from an untrusted peer: %d %s", xff, code, body)
		}
		// From a trusted proxy any value gives some address (never the
		// empty one all such requests would share) and never fails the
		// request.
		if code, body := clientIP(t, h, "10.0.0.2:80", []string{xff}); code != 200 || body == `{"ip":""}`+"\n" {
			t.Fatalf("X-Forwarded-For %q from a trusted proxy: %d %s", xff, code, body)
		}
	})
}
