package middleware_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-template/brain/api/middleware"
)

// failingBody yields its text, then err.
type failingBody struct {
	r   io.Reader
	err error
}

func (b *failingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = b.err
	}
	return n, err
}

func (b *failingBody) Close() error { return nil }

// readAll is what a handler behind MarkBodyErrors reads of body.
func readAll(body io.ReadCloser) (string, error) {
	var got string
	var err error
	h := middleware.MarkBodyErrors(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var b []byte
		b, err = io.ReadAll(r.Body)
		got = string(b)
	}))
	req := httptest.NewRequest("POST", "/", nil)
	req.Body = body
	serve(h, req)
	return got, err
}

func TestMarkBodyErrors(t *testing.T) {
	got, err := readAll(&failingBody{strings.NewReader("half"), io.ErrUnexpectedEOF})
	var re *middleware.ReadError
	if got != "half" || !errors.As(err, &re) || !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != io.ErrUnexpectedEOF.Error() {
		t.Fatalf("read %q, %v (%T); want the bytes, then the error marked and unwrappable", got, err, err)
	}
	// The end of a body is no error, and is not marked.
	if got, err := readAll(io.NopCloser(strings.NewReader("whole"))); got != "whole" || err != nil {
		t.Fatalf("read %q, %v; want the whole body and no error", got, err)
	}
	// No body stays no body: handlers compare it with http.NoBody.
	var body io.ReadCloser
	h := middleware.MarkBodyErrors(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { body = r.Body }))
	serve(h, httptest.NewRequest("GET", "/", nil))
	if body != http.NoBody {
		t.Fatalf("a request without a body has body %T, want http.NoBody", body)
	}
}
