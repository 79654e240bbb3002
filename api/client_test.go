package api_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/danielgtaylor/huma/v2"
)

// rawRequest sends raw bytes on a new connection to srv, closes the
// sending side (the client has nothing more to say) and returns the
// response, or an error when the server closed without one.
func rawRequest(t *testing.T, srv *httptest.Server, raw string) (*http.Response, string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, "", err
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body), nil
}

// accessLine waits for the access log line of a request to route and
// returns it. The server writes it after the response, so it can trail
// what the client saw.
func accessLine(t *testing.T, logs *apitest.Logs, route string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "msg=request") && strings.Contains(l, "route="+route+" ") {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for %s:\n%s", route, logs)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBodyReadErrors sends bodies that cannot be read: cut short, with
// broken chunked framing, or too slow. Each is the client's mistake: a
// 4xx envelope and an INFO access line, never a 500 logged as an error.
func TestBodyReadErrors(t *testing.T) {
	const head = "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for _, tc := range []struct {
		name, raw string
		status    int
		code      string
	}{
		{"truncated", head + "Content-Length: 100\r\n\r\n" + `{"username":"a`, 400, "invalid-request"},
		{"bad_chunk_size", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400, "invalid-request"},
		{"truncated_chunk", head + "Transfer-Encoding: chunked\r\n\r\n10\r\n" + `{"user`, 400, "invalid-request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := mustRawServer(t, api.Config{})
			srv := httptest.NewServer(s)
			defer srv.Close()
			resp, body, err := rawRequest(t, srv, tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			line := accessLine(t, logs, "/api/v1/auth/login")
			if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "status=400") || strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("want one INFO access line with status 400 and no error:\n%s", logs)
			}
		})
	}
	t.Run("too_slow", func(t *testing.T) {
		svc := MustAuth(t)
		s, logs := mustRawServer(t, api.Config{Auth: svc})
		huma.Register(s.API, huma.Operation{OperationID: "test-slow", Method: http.MethodPost, Path: "/api/v1/test/slow", BodyReadTimeout: 50 * time.Millisecond},
			func(ctx context.Context, in *echoInput) (*echoOutput, error) { return nil, nil })
		srv := httptest.NewServer(s)
		defer srv.Close()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Headers, then silence: the body never comes.
		_, _ = io.WriteString(conn, "POST /api/v1/test/slow HTTP/1.1\r\nHost: x\r\nX-API-Key: "+mustKey(t, svc)+"\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{")
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("status %d, want 408", resp.StatusCode)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("a slow client is logged as an error:\n%s", logs)
		}
	})
}

// blockingStore is an auth store whose API-key lookup waits until the
// request is abandoned, then fails the way a database driver does when
// its context ends (without wrapping context.Canceled).
type blockingStore struct {
	auth.Store
	entered chan struct{}
}

func (b *blockingStore) APIKeyByHash(ctx context.Context, hash string) (auth.APIKey, auth.User, error) {
	close(b.entered)
	<-ctx.Done()
	return auth.APIKey{}, auth.User{}, errors.New("sqlite: interrupted")
}

// TestClientGone has the client hang up while the server still works on
// its request: during authentication (a store lookup) and inside a
// handler. Nothing can be sent; the access log records 499 at INFO, and
// nothing is logged as an error or reported as an outage.
func TestClientGone(t *testing.T) {
	hangUp := func(t *testing.T, srv *httptest.Server, raw string, entered <-chan struct{}) {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		<-entered
		conn.Close()
	}
	t.Run("during_authentication", func(t *testing.T) {
		bs := &blockingStore{Store: store.NewAuthStore(storetest.Open(t, store.SQLite)), entered: make(chan struct{})}
		svc := auth.NewService(bs, auth.Config{Argon2: cheap})
		ctx := context.Background()
		u, err := svc.AddUser(ctx, "ada", "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := svc.CreateAPIKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		s, logs := mustRawServer(t, api.Config{Auth: svc})
		srv := httptest.NewServer(s)
		defer srv.Close()
		hangUp(t, srv, "GET /api/v1/auth/me HTTP/1.1\r\nHost: x\r\nX-API-Key: "+key+"\r\n\r\n", bs.entered)
		line := accessLine(t, logs, "/api/v1/auth/me")
		if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "status=499") || strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("want an INFO access line with status 499 and no error:\n%s", logs)
		}
	})
	t.Run("in_a_handler", func(t *testing.T) {
		svc := MustAuth(t)
		s, logs := mustRawServer(t, api.Config{Auth: svc})
		entered := make(chan struct{})
		huma.Register(s.API, huma.Operation{OperationID: "test-wait", Method: http.MethodGet, Path: "/api/v1/test/wait"},
			func(ctx context.Context, _ *struct{}) (*echoOutput, error) {
				close(entered)
				<-ctx.Done()
				return nil, errors.New("query: " + ctx.Err().Error())
			})
		srv := httptest.NewServer(s)
		defer srv.Close()
		key := mustKey(t, svc)
		hangUp(t, srv, "GET /api/v1/test/wait HTTP/1.1\r\nHost: x\r\nX-API-Key: "+key+"\r\n\r\n", entered)
		line := accessLine(t, logs, "/api/v1/test/wait")
		if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "status=499") || strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("want an INFO access line with status 499 and no error:\n%s", logs)
		}
	})
}
