package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
)

// specServer serves a server with no feature over HTTP until t ends, and
// returns it, its test server and its spec.
func specServer(t *testing.T) (*api.Server, *httptest.Server, []byte) {
	s, _ := mustRawServer(t, api.Config{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	spec, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return s, srv, spec
}

// TestDocumentsRenderedOnce fetches the spec and the reference page
// repeatedly: each is rendered on its first request only, served with a
// strong, stable ETag and Cache-Control: no-cache, and a request whose
// If-None-Match names the ETag gets 304 without a body.
func TestDocumentsRenderedOnce(t *testing.T) {
	s, srv, spec := specServer(t)
	get := func(path, ifNoneMatch string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, path := range []string{"/openapi.json", "/openapi.yaml", "/docs"} {
		first, body := get(path, "")
		etag := first.Header.Get("ETag")
		if first.StatusCode != 200 || len(etag) < 10 || !strings.HasPrefix(etag, `"`) || first.Header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s: %d, ETag %q, Cache-Control %q; want 200, a strong ETag and no-cache", path, first.StatusCode, etag, first.Header.Get("Cache-Control"))
		}
		if path == "/openapi.json" && !bytes.Equal(body, spec) {
			t.Fatal("/openapi.json differs from Spec()")
		}
		for range 5 {
			again, b := get(path, "")
			if again.Header.Get("ETag") != etag || !bytes.Equal(b, body) {
				t.Fatalf("%s changed between requests", path)
			}
		}
		notModified, b := get(path, etag)
		if notModified.StatusCode != http.StatusNotModified || len(b) != 0 {
			t.Fatalf("%s with If-None-Match: %d and %d bytes, want 304 and none", path, notModified.StatusCode, len(b))
		}
		if other, _ := get(path, `"stale"`); other.StatusCode != 200 {
			t.Fatalf("%s with a stale ETag: %d, want 200", path, other.StatusCode)
		}
	}
	if n := api.Renders(s); n != 3 {
		t.Fatalf("%d renders for 3 documents fetched 8 times each, want 3", n)
	}
}

// A Range header is ignored on the documents: thousands of one-byte ranges
// would make a small request cost a multipart answer many times the size
// of the document.
func TestDocumentsIgnoreRange(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	l := apitest.Serve(t, s)
	ranges := make([]string, 2000)
	for i := range ranges {
		ranges[i] = strconv.Itoa(i) + "-" + strconv.Itoa(i)
	}
	for _, path := range []string{"/openapi.json", "/docs"} {
		full := l.Call("GET", path, nil).Want(t, 200, path)
		r := l.Call("GET", path, nil, "Range: bytes="+strings.Join(ranges, ","))
		if r.Status != 200 || r.Body != full.Body {
			t.Fatalf("%s with 2000 ranges: %d, %d bytes (the document has %d); want the document whole",
				path, r.Status, len(r.Body), len(full.Body))
		}
	}
}

// TestDocumentsGzip fetches the spec over HTTP with and without
// Accept-Encoding: gzip. A client that takes gzip gets the compressed
// bytes, which decode to exactly the spec, with their own ETag and length;
// any other client gets the spec as it is. Both are told the answer varies
// by Accept-Encoding, and HEAD describes the same answer as GET.
func TestDocumentsGzip(t *testing.T) {
	_, srv, spec := specServer(t)
	// Go's client would ask for gzip and decode it unseen: this one does neither.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	do := func(method, acceptEncoding, ifNoneMatch string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, srv.URL+"/openapi.json", nil)
		req.Header.Set("Accept-Encoding", acceptEncoding)
		req.Header.Set("If-None-Match", ifNoneMatch)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	plain, plainBody := do("GET", "", "")
	zipped, zippedBody := do("GET", "gzip, deflate, br", "")
	for _, r := range []*http.Response{plain, zipped} {
		if r.StatusCode != 200 || r.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("status %d, Vary %q; want 200 and Accept-Encoding", r.StatusCode, r.Header.Get("Vary"))
		}
	}
	if plain.Header.Get("Content-Encoding") != "" || !bytes.Equal(plainBody, spec) || plain.ContentLength != int64(len(spec)) {
		t.Fatalf("without gzip: Content-Encoding %q, %d bytes (Content-Length %d); want the spec's %d as they are",
			plain.Header.Get("Content-Encoding"), len(plainBody), plain.ContentLength, len(spec))
	}
	if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.ContentLength != int64(len(zippedBody)) || len(zippedBody) > len(spec)/4 {
		t.Fatalf("with gzip: Content-Encoding %q, %d bytes (Content-Length %d); want gzip, under a quarter of the spec's %d",
			zipped.Header.Get("Content-Encoding"), len(zippedBody), zipped.ContentLength, len(spec))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zippedBody))
	if err != nil {
		t.Fatal(err)
	}
	if decoded, err := io.ReadAll(zr); err != nil || !bytes.Equal(decoded, spec) {
		t.Fatalf("the gzip body decodes to %d bytes (%v), want exactly the spec", len(decoded), err)
	}
	etag := zipped.Header.Get("ETag")
	if etag == plain.Header.Get("ETag") || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETags %q (gzip) and %q (plain): want two strong ones", etag, plain.Header.Get("ETag"))
	}
	if r, b := do("GET", "gzip", etag); r.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Fatalf("gzip with If-None-Match of its ETag: %d and %d bytes, want 304 and none", r.StatusCode, len(b))
	}
	if r, _ := do("GET", "", etag); r.StatusCode != 200 {
		t.Fatalf("plain with the gzip ETag: %d, want 200 (another representation)", r.StatusCode)
	}
	head, b := do("HEAD", "gzip", "")
	if head.StatusCode != 200 || len(b) != 0 || head.Header.Get("Content-Encoding") != "gzip" ||
		head.ContentLength != zipped.ContentLength || head.Header.Get("ETag") != etag {
		t.Fatalf("HEAD with gzip: %d, %d bytes, Content-Encoding %q, Content-Length %d, ETag %q; want GET's headers, no body",
			head.StatusCode, len(b), head.Header.Get("Content-Encoding"), head.ContentLength, head.Header.Get("ETag"))
	}
}
