package main

import (
	"cmp"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/brain-template/brain/internal/product"
)

// composeFile is the part of compose.yaml that TestCompose reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   dependsOn         `yaml:"depends_on"`
	Networks    map[string]struct {
		IPv4Address string `yaml:"ipv4_address"`
	} `yaml:"networks"`
}

// dependsOn is a service's depends_on: the services it names, in either
// of compose's forms (a list, or a map with conditions).
type dependsOn []string

func (d *dependsOn) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			*d = append(*d, n.Content[i].Value)
		}
		return nil
	}
	return n.Decode((*[]string)(d))
}

// compose.yaml runs what TestReplicasBehindABalancer tests: as many
// replicas of the image `make image` builds, each with replicaEnv's
// settings (brain's own settings parser takes them, with the image's), on
// the file's PostgreSQL and Redis; behind haproxy running haproxyConfig,
// the file startBalancer runs, whose address is the one the replicas
// trust, whose server lines are the replicas at the image's port, whose
// bind port is the one published, and whose idle timeout outlasts the
// replicas' stream heartbeat. Only the balancer is published.
func TestCompose(t *testing.T) {
	text, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal([]byte(interpolate(t, string(text), map[string]string{"BRAIN_ADMIN_PASSWORD": adminPassword})), &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	image := makefileDefault(t, "IMAGE")
	var replicas []string
	var lb composeService
	for name, s := range f.Services {
		if s.Image == image {
			replicas = append(replicas, name)
		}
		if slices.ContainsFunc(s.Volumes, func(v string) bool {
			return strings.HasPrefix(v, "./"+strings.TrimPrefix(haproxyConfig, "../../")+":")
		}) {
			lb = s
		}
	}
	slices.Sort(replicas)
	if len(replicas) != balancerReplicas {
		t.Fatalf("compose.yaml runs the image %s (the Makefile's IMAGE) as %v, want %d replicas", image, replicas, balancerReplicas)
	}
	if lb.Image == "" {
		t.Fatalf("no service of compose.yaml mounts %s", haproxyConfig)
	}
	bind, idle, servers := haproxyDirectives(t)

	// The balancer's address is fixed, in the network's subnet.
	lbAddr, err := netip.ParseAddr(lb.Networks["default"].IPv4Address)
	if err != nil {
		t.Fatalf("the balancer's ipv4_address on the default network: %v", err)
	}
	if subnets := f.Networks["default"].IPAM.Config; len(subnets) != 1 || !netip.MustParsePrefix(subnets[0].Subnet).Contains(lbAddr) {
		t.Errorf("the default network's subnets %+v, want one holding the balancer's address %s", subnets, lbAddr)
	}
	if _, port, _ := net.SplitHostPort(bind); !slices.ContainsFunc(lb.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }) {
		t.Errorf("the balancer publishes %v, want its bind port %s (%s)", lb.Ports, port, bind)
	}
	if !slices.Equal(sorted(lb.DependsOn), replicas) {
		t.Errorf("the balancer depends on %v, want the replicas %v", lb.DependsOn, replicas)
	}

	imageEnv := containerfileEnv(t)
	var backends []string
	for _, name := range replicas {
		s := f.Services[name]
		got := s.Environment
		if want := replicaEnv(got["BRAIN_DATABASE_URL"], got["BRAIN_REDIS_URL"], got["BRAIN_TRUSTED_PROXIES"], adminPassword); !maps.Equal(got, want) {
			t.Errorf("%s's environment is\n%v\nwant the balancer test's settings (replicaEnv), the admin's password from BRAIN_ADMIN_PASSWORD:\n%v", name, got, want)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %v: a replica is reached through the balancer only", name, s.Ports)
		}
		all := maps.Clone(imageEnv)
		maps.Copy(all, got)
		cfg, err := parseConfig(product.Name, nil, env(all), io.Discard)
		if err != nil {
			t.Fatalf("%s's settings (the image's and compose.yaml's): %v", name, err)
		}
		if want := []netip.Prefix{netip.PrefixFrom(lbAddr, 32)}; !slices.Equal(cfg.TrustedProxies, want) {
			t.Errorf("%s trusts %v, want the balancer's address %v", name, cfg.TrustedProxies, want)
		}
		db := serviceOf(t, f, name, cfg.DatabaseURL, "postgres")
		u, _ := url.Parse(cfg.DatabaseURL)
		user := cmp.Or(db.Environment["POSTGRES_USER"], "postgres")
		if pw, _ := u.User.Password(); u.User.Username() != user || pw != db.Environment["POSTGRES_PASSWORD"] || u.Path != "/"+cmp.Or(db.Environment["POSTGRES_DB"], user) {
			t.Errorf("%s's database URL %s does not match the postgres service's user, password and database %v", name, cfg.DatabaseURL, db.Environment)
		}
		serviceOf(t, f, name, cfg.RedisURL, "redis")
		_, port, _ := net.SplitHostPort(cfg.Addr)
		backends = append(backends, net.JoinHostPort(name, port))
		if cfg.Streams.Heartbeat >= idle {
			t.Errorf("%s's stream heartbeat %v is not shorter than the balancer's idle timeout %v: a silent stream would be cut", name, cfg.Streams.Heartbeat, idle)
		}
	}
	if !slices.Equal(sorted(servers), backends) {
		t.Errorf("%s's servers are %v, want the replicas at the image's port: %v", haproxyConfig, servers, backends)
	}
}

// serviceOf is the service of f whose name is rawURL's host, at the port
// its image (which must name want) listens on.
func serviceOf(t *testing.T, f composeFile, replica, rawURL, want string) composeService {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", replica, err)
	}
	s, ok := f.Services[u.Hostname()]
	if !ok || !strings.Contains(s.Image, want) {
		t.Fatalf("%s's %s URL %s names no %s service of compose.yaml", replica, want, rawURL, want)
	}
	if ports := map[string]string{"postgres": "5432", "redis": "6379"}; u.Port() != ports[want] {
		t.Errorf("%s's %s URL %s: port %q, want %s", replica, want, rawURL, u.Port(), ports[want])
	}
	return s
}

// haproxyDirectives reads haproxyConfig's bind address, its idle timeout
// (the shorter of timeout client and timeout server) and its servers'
// addresses.
func haproxyDirectives(t *testing.T) (bind string, idle time.Duration, servers []string) {
	t.Helper()
	b, err := os.ReadFile(haproxyConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "bind":
			bind = f[1]
		case len(f) >= 3 && f[0] == "timeout" && (f[1] == "client" || f[1] == "server"):
			d, err := time.ParseDuration(f[2])
			if err != nil {
				t.Fatalf("%s: %q: %v", haproxyConfig, line, err)
			}
			if idle == 0 || d < idle {
				idle = d
			}
		case len(f) >= 3 && f[0] == "server":
			servers = append(servers, f[2])
		}
	}
	if bind == "" || idle == 0 || len(servers) == 0 {
		t.Fatalf("%s: bind %q, idle timeout %v, servers %v; want all three", haproxyConfig, bind, idle, servers)
	}
	return bind, idle, servers
}

// composeVar is a variable compose.yaml interpolates: ${NAME},
// ${NAME:-default} or ${NAME:?error} (and their forms without the colon).
var composeVar = regexp.MustCompile(`\$\{(\w+)(?:(:?[-?])([^}]*))?\}`)

// interpolate is text with its variables replaced, as compose does, from
// vars: one it lacks takes its default, and one required fails the test.
func interpolate(t *testing.T, text string, vars map[string]string) string {
	t.Helper()
	return composeVar.ReplaceAllStringFunc(text, func(m string) string {
		v := composeVar.FindStringSubmatch(m)
		if vars[v[1]] != "" {
			return vars[v[1]]
		}
		if strings.HasSuffix(v[2], "?") {
			t.Fatalf("compose.yaml requires %s, which the test does not set: %s", v[1], v[3])
		}
		return v[3]
	})
}

// makefileDefault is the default the Makefile gives variable (NAME ?= value).
func makefileDefault(t *testing.T, variable string) string {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + variable + ` \?= (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("the Makefile gives %s no default", variable)
	}
	return string(m[1])
}

// containerfileEnv is what Containerfile's ENV instructions set.
func containerfileEnv(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "ENV" {
			continue
		}
		for _, pair := range f[1:] {
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				t.Fatalf("Containerfile: %q: want ENV NAME=value ...", line)
			}
			kv[k] = v
		}
	}
	if len(kv) == 0 {
		t.Fatal("Containerfile sets no environment")
	}
	return kv
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
