package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// balancerIdle is the balancer's idle timeout, client and server side: a
// stream outlives it only by its heartbeats.
const balancerIdle = 2 * time.Second

// startBalancer starts haproxy (Debian's package) on a free loopback port
// in front of backends, round robin, adding X-Forwarded-For, and returns
// its base URL. idle is its client and server timeout: how long a stream
// may stay silent, and a request wait for its answer. A replica that
// refuses connections is skipped (a request retried on the next; health
// checks every 500 ms). It skips the test when haproxy is missing (fails
// under CI=true).
func startBalancer(t *testing.T, backends []string, idle time.Duration) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the balancer test needs haproxy (apt-get install haproxy): %v", err)
		}
		t.Skipf("no haproxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client %[2]s
  timeout server %[2]s
  timeout http-request 5s
frontend brain
  bind %[1]s
  option forwardfor
  default_backend replicas
backend replicas
  balance roundrobin
  option redispatch
  retries 3
`, addr, strconv.Itoa(int(idle.Milliseconds()))+"ms")
	for i, b := range backends {
		cfg += fmt.Sprintf("  server r%d %s check inter 500ms\n", i, strings.TrimPrefix(b, "http://"))
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", file)
	logs := newLogPipe()
	cmd.Stdout, cmd.Stderr = logs.w, logs.w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(serverStart); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not listen on %s within %v:\n%s", addr, serverStart, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
