package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

func TestCSRF(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	deny := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	withKey := func(r *http.Request) bool { return r.Header.Get("X-API-Key") != "" }
	h := middleware.CSRF([]string{"https://app.example.com"}, withKey, deny)(ok)
	tests := []struct {
		name, method string
		headers      map[string]string
		want         int
	}{
		{"cross_site_post", "POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusTeapot},
		{"cross_origin_by_origin", "POST", map[string]string{"Origin": "https://evil.example"}, http.StatusTeapot},
		{"same_origin", "POST", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusNoContent},
		{"no_browser_headers", "POST", nil, http.StatusNoContent},
		{"safe_method", "GET", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusNoContent},
		{"trusted_origin", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://app.example.com"}, http.StatusNoContent},
		{"exempt", "DELETE", map[string]string{"Sec-Fetch-Site": "cross-site", "X-API-Key": "brk_x"}, http.StatusNoContent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://brain.example/api/v1/apikeys", nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if rec := serve(h, req); rec.Code != tc.want {
				t.Fatalf("got %d, want %d", rec.Code, tc.want)
			}
		})
	}

	t.Run("Defaults", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/", nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("X-API-Key", "brk_x") // no exempt function: a key is no pass
		if rec := serve(middleware.CSRF(nil, nil, nil)(ok), req); rec.Code != http.StatusForbidden {
			t.Fatalf("got %d, want a bare 403", rec.Code)
		}
	})
	t.Run("BadOrigin", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("an origin that does not parse was accepted")
			}
		}()
		middleware.CSRF([]string{"not an origin"}, nil, nil)
	})
}
