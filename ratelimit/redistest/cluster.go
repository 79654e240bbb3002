package redistest

import (
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testproxy"
	"github.com/redis/rueidis"
)

// A Cluster is a Redis Cluster for one test: three masters with a replica
// each, on free loopback ports.
type Cluster struct {
	Addrs   []string // the nodes' host:port, masters first as created
	tb      testing.TB
	procs   map[string]*os.Process
	proxies map[string]*testproxy.Proxy // by node address
	real    map[string]string           // node address by proxy address
}

// StartCluster starts a Cluster with redis-server and redis-cli, or skips.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	return start(tb, false)
}

// StartClusterBehindProxies is StartCluster with a [testproxy.Proxy] in
// front of each node; Option and URL give the proxies' addresses.
func StartClusterBehindProxies(tb testing.TB) *Cluster {
	tb.Helper()
	return start(tb, true)
}

func start(tb testing.TB, proxied bool) *Cluster {
	tb.Helper()
	server, err := exec.LookPath("redis-server")
	if err == nil {
		_, err = exec.LookPath("redis-cli")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("a Redis Cluster test needs redis-server and redis-cli (apt-get install redis-server): %v", err)
		}
		tb.Skipf("no redis-server to start a cluster with: %v", err)
	}
	dir := tb.TempDir()
	c := &Cluster{tb: tb, procs: map[string]*os.Process{}}
	if proxied {
		c.proxies, c.real = map[string]*testproxy.Proxy{}, map[string]string{}
	}
	for _, port := range freePorts(tb, 6) {
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
			"--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no", "--dir", dir,
			"--logfile", "redis-" + strconv.Itoa(port) + ".log"}
		if proxied {
			p := testproxy.New(tb, addr)
			c.proxies[addr], c.real[p.Addr()] = p, addr
			_, pport, _ := net.SplitHostPort(p.Addr())
			args = append(args, "--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", pport,
				"--cluster-announce-bus-port", strconv.Itoa(port+10000))
		}
		cmd := exec.Command(server, args...)
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		c.Addrs = append(c.Addrs, addr)
		c.procs[addr] = cmd.Process
	}
	for _, a := range c.Addrs {
		c.waitFor(a, "PING", "PONG")
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range c.Addrs {
		c.waitFor(a, "CLUSTER INFO", "cluster_state:ok")
	}
	c.waitSynced()
	return c
}

func (c *Cluster) waitSynced() {
	c.tb.Helper()
	for _, a := range c.Addrs {
		c.waitUntil(a, "INFO replication", "replication settled", func(out string) bool {
			return strings.Contains(out, "role:master") && strings.Contains(out, "connected_slaves:1") ||
				strings.Contains(out, "master_link_status:up") && strings.Contains(out, "master_sync_in_progress:0")
		})
	}
}

// Option returns client options for the cluster, without client caching.
func (c *Cluster) Option() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: c.seeds(), DisableCache: true}
}

// URL is the cluster as a server's redis URL: the others as addr= seeds.
func (c *Cluster) URL() string {
	seeds := c.seeds()
	u := "redis://" + seeds[0]
	for i, a := range seeds[1:] {
		u += map[bool]string{true: "?", false: "&"}[i == 0] + "addr=" + a
	}
	return u
}

func (c *Cluster) seeds() []string {
	if c.proxies == nil {
		return c.Addrs
	}
	seeds := make([]string, len(c.Addrs))
	for i, a := range c.Addrs {
		seeds[i] = c.proxies[a].Addr()
	}
	return seeds
}

// Proxy returns the proxy in front of the node at addr.
func (c *Cluster) Proxy(addr string) *testproxy.Proxy {
	c.tb.Helper()
	p := c.proxies[addr]
	if p == nil {
		c.tb.Fatalf("no proxy in front of %s: start the cluster with StartClusterBehindProxies", addr)
	}
	return p
}

func (c *Cluster) node(announced string) string {
	addr := strings.Split(announced, "@")[0]
	if real, ok := c.real[addr]; ok {
		return real
	}
	return addr
}

// Masters returns the addresses of the nodes that are masters now.
func (c *Cluster) Masters() []string {
	var masters []string
	for _, line := range strings.Split(c.Do(c.Addrs[0], "CLUSTER NODES"), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") {
			masters = append(masters, c.node(f[1]))
		}
	}
	return masters
}

// Failover makes the replica of master take its place and waits until the
// cluster agrees.
func (c *Cluster) Failover(master string) {
	c.tb.Helper()
	id := strings.TrimSpace(c.Do(master, "CLUSTER MYID"))
	var replica string
	for _, line := range strings.Split(c.Do(master, "CLUSTER NODES"), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[3] == id {
			replica = c.node(f[1])
		}
	}
	if replica == "" {
		c.tb.Fatalf("master %s has no replica", master)
	}
	if out := c.Do(replica, "CLUSTER FAILOVER"); !strings.Contains(out, "OK") {
		c.tb.Fatalf("CLUSTER FAILOVER on %s: %s", replica, out)
	}
	c.waitFor(replica, "ROLE", "master")
	newID := strings.TrimSpace(c.Do(replica, "CLUSTER MYID"))
	c.waitAgreed(id, newID)
	c.waitSynced()
}

func (c *Cluster) waitAgreed(oldID, newID string) {
	c.tb.Helper()
	for _, a := range c.Addrs {
		c.waitUntil(a, "CLUSTER NODES", newID+" replaced "+oldID, func(out string) bool {
			flags := map[string]string{} // by node id
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 2 {
					flags[f[0]] = f[2]
				}
			}
			return strings.Contains(flags[oldID], "slave") && strings.Contains(flags[newID], "master")
		})
	}
}

// Reshard moves n hash slots and their keys from master from to master to.
func (c *Cluster) Reshard(from, to string, n int) {
	c.tb.Helper()
	fromID := strings.TrimSpace(c.Do(from, "CLUSTER MYID"))
	toID := strings.TrimSpace(c.Do(to, "CLUSTER MYID"))
	out, err := exec.Command("redis-cli", "--cluster", "reshard", from, "--cluster-from", fromID, "--cluster-to", toID,
		"--cluster-slots", strconv.Itoa(n), "--cluster-yes").CombinedOutput()
	if err != nil {
		c.tb.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
}

// Pause stops the node at addr (SIGSTOP) until Resume.
func (c *Cluster) Pause(addr string) { c.signal(addr, syscall.SIGSTOP) }

// Resume lets a paused node run again (SIGCONT).
func (c *Cluster) Resume(addr string) { c.signal(addr, syscall.SIGCONT) }

func (c *Cluster) signal(addr string, sig syscall.Signal) {
	c.tb.Helper()
	if err := c.procs[addr].Signal(sig); err != nil {
		c.tb.Fatalf("%s: %v", addr, err)
	}
}

// Do runs one redis-cli command against addr and returns its output.
func (c *Cluster) Do(addr, command string) string {
	host, port, _ := net.SplitHostPort(addr)
	out, _ := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, strings.Fields(command)...)...).CombinedOutput()
	return string(out)
}

func (c *Cluster) waitFor(addr, command, want string) {
	c.tb.Helper()
	c.waitUntil(addr, command, strconv.Quote(want), func(out string) bool { return strings.Contains(out, want) })
}

// waitUntil runs command against addr until ok accepts its output.
func (c *Cluster) waitUntil(addr, command, what string, ok func(out string) bool) {
	c.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := c.Do(addr, command)
		if ok(out) {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("%s: %s never gave %s; last: %s", addr, command, what, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n free loopback ports whose bus ports (+10000) are free.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			tb.Fatal("no free loopback ports for a cluster")
		}
		p := 20000 + rand.IntN(30000)
		if free(p) && free(p+10000) {
			ports = append(ports, p)
		}
	}
	return ports
}

func free(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
