package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

// clientOf is the address ClientIP(trusted) finds for a request from
// peer carrying xff.
func clientOf(trusted []string, peer string, xff ...string) string {
	var prefixes []netip.Prefix
	for _, p := range trusted {
		prefixes = append(prefixes, netip.MustParsePrefix(p))
	}
	var got string
	h := middleware.ClientIP(prefixes)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = middleware.GetClientIP(r.Context())
	}))
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = peer
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	serve(h, req)
	return got
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
		{"v4_mapped_peer", nil, "[::ffff:203.0.113.7]:5555", nil, "203.0.113.7"},
		{"trusted_peer_rightmost_untrusted", []string{"10.0.0.0/8"}, "10.0.0.2:80", []string{"198.51.100.1, 198.51.100.2, 10.0.0.9"}, "198.51.100.2"},
		{"trusted_peer_never_leftmost", []string{"10.0.0.0/8"}, "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.2"}, "198.51.100.2"},
		{"trusted_peer_without_xff", []string{"127.0.0.0/8"}, "127.0.0.5:80", nil, "127.0.0.5"},
		{"trusted_peer_blank_xff", []string{"127.0.0.0/8"}, "127.0.0.6:80", []string{" , "}, "127.0.0.6"},
		{"trusted_peer_garbage_xff", []string{"127.0.0.0/8"}, "127.0.0.7:80", []string{"unknown"}, "127.0.0.7"},
		{"trusted_hops_only", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"127.0.0.50, 127.0.0.9"}, "127.0.0.50"},
		{"xff_with_port", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"10.0.0.1:443"}, "10.0.0.1"},
		{"xff_v6_with_port", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"xff_with_port_behind_untrusted", []string{"127.0.0.0/8"}, "127.0.0.8:80", []string{"10.0.0.1:443, 198.51.100.3:1"}, "198.51.100.3"},
		{"unparsable_peer", []string{"127.0.0.0/8"}, "nowhere", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := clientOf(tc.trusted, tc.peer, tc.xff...); got != tc.want {
				t.Fatalf("client %q, want %q", got, tc.want)
			}
		})
	}
	if ip := middleware.GetClientIP(context.Background()); ip != "" {
		t.Fatalf("GetClientIP outside ClientIP = %q, want \"\"", ip)
	}
}

// FuzzClientIP: whatever an untrusted peer puts in X-Forwarded-For, the
// client is the peer; from a trusted proxy, it is some address, never the
// empty one all such requests would share.
func FuzzClientIP(f *testing.F) {
	for _, seed := range []string{"", "1.2.3.4", "1.2.3.4, 10.0.0.1", "garbage", "::1", "[::1]:80", "10.0.0.1,,,",
		"\x00\xff", "2001:db8::1%eth0", "::ffff:10.0.0.1", " , ,"} {
		f.Add(seed)
	}
	trusted := []string{"10.0.0.0/8", "::1/128"}
	f.Fuzz(func(t *testing.T, xff string) {
		if got := clientOf(trusted, "203.0.113.7:5555", xff); got != "203.0.113.7" {
			t.Fatalf("X-Forwarded-For %q from an untrusted peer: client %q", xff, got)
		}
		if got := clientOf(trusted, "10.0.0.2:80", xff); got == "" {
			t.Fatalf("X-Forwarded-For %q from a trusted proxy: no client", xff)
		}
	})
}
