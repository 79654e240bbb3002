package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// balancerIdle is the balancer's idle timeout, client and server side: a
// stream outlives it only by its heartbeats.
const balancerIdle = 2 * time.Second

// haproxyConfig is the balancer's configuration, the one compose.yaml
// runs; startBalancer runs it too (see balancerConfig).
const haproxyConfig = "../../deploy/haproxy.cfg"

// balancerReplicas is how many replicas run behind the balancer, in
// TestReplicasBehindABalancer and in compose.yaml.
const balancerReplicas = 3

// replicaEnv is the configuration of a replica behind the balancer, the
// same in TestReplicasBehindABalancer and in compose.yaml (TestCompose
// holds the file to it): the one PostgreSQL and the one Redis (in the
// test, a Redis Cluster) every replica shares, the balancer's address,
// whose X-Forwarded-For is believed, the first admin's password, and the
// session cookie sent over the balancer's plain HTTP.
func replicaEnv(databaseURL, redisURL, balancer, password string) map[string]string {
	return map[string]string{
		"BRAIN_DATABASE_URL":    databaseURL,
		"BRAIN_REDIS_URL":       redisURL,
		"BRAIN_TRUSTED_PROXIES": balancer,
		"BRAIN_ADMIN_PASSWORD":  password,
		"BRAIN_COOKIE_SECURE":   "false",
	}
}

// startBalancer starts haproxy (Debian's package) on a free loopback port
// in front of backends and returns its base URL. It runs haproxyConfig,
// compose.yaml's: round robin, adding X-Forwarded-For, a replica that
// refuses connections skipped (a request retried on the next; health
// checks every 500 ms). idle is its client and server timeout: how long a
// stream may stay silent, and a request wait for its answer. It skips the
// test when haproxy is missing (fails under CI=true).
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
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(balancerConfig(t, addr, backends, idle)), 0o600); err != nil {
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

// balancerConfig is haproxyConfig with bind as the address of its bind
// line, backends (http://host:port) in place of its server lines, each
// with the options of its first, and idle as its timeout client and
// timeout server. A line it would replace that the file lacks (or has
// twice) fails the test: the test would run another balancer than
// compose.yaml.
func balancerConfig(t testing.TB, bind string, backends []string, idle time.Duration) string {
	t.Helper()
	b, err := os.ReadFile(haproxyConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	ms := strconv.FormatInt(idle.Milliseconds(), 10) + "ms"
	for _, r := range []struct{ re, with string }{
		{`(?m)^([ \t]*bind )\S+$`, "${1}" + bind},
		{`(?m)^([ \t]*timeout client )\S+$`, "${1}" + ms},
		{`(?m)^([ \t]*timeout server )\S+$`, "${1}" + ms},
	} {
		re := regexp.MustCompile(r.re)
		if n := len(re.FindAllString(cfg, -1)); n != 1 {
			t.Fatalf("%s: %d lines match %s, want 1", haproxyConfig, n, r.re)
		}
		cfg = re.ReplaceAllString(cfg, r.with)
	}
	server := regexp.MustCompile(`(?m)^([ \t]*server )\S+ \S+(.*\n)`)
	first := server.FindStringSubmatchIndex(cfg)
	if first == nil {
		t.Fatalf("%s has no server line", haproxyConfig)
	}
	var servers strings.Builder
	for i, b := range backends {
		fmt.Fprintf(&servers, "%sr%d %s%s", cfg[first[2]:first[3]], i+1, strings.TrimPrefix(b, "http://"), cfg[first[4]:first[5]])
	}
	return cfg[:first[0]] + servers.String() + server.ReplaceAllString(cfg[first[0]:], "")
}
