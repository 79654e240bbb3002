package main

import (
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/product"
)

// imageChecks are what TestImage checks of features in the running
// image, beyond the platform's own. Each writes, with the admin's session,
// in the image's first run, and returns what reads it back in the second,
// a restart on the same volume. The memory example adds its check in a
// file of its own, removed with it.
var imageChecks []func(c client, cookie string) (readBack func(c client, cookie string))

// imageConfig is the part of an image's configuration TestImage reads.
type imageConfig struct {
	Config struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		Volumes      map[string]struct{}
		ExposedPorts map[string]struct{}
	} `json:"config"`
}

// The image `make image` builds holds brain, static, the CA certificates
// and /tmp (1777), and no other file; its environment is Containerfile's,
// listening on every interface of the container on ports it exposes; its
// user is not root, and its data directory is a volume that user owns.
// Run from its files alone, as its user, with its environment and command
// (chroot: nothing of the host but the kernel; the host's network, so it
// listens on loopback ports of its own), it serves: its health, a login,
// an API key made; and after a restart on the same volume, where its
// SQLite database is, the key and the session still work. The image is
// built from the dashboard web/dist holds, built or not (make -o web).
// The test skips without podman, or without root or sudo -n for chroot
// (fails under CI=true).
func TestImage(t *testing.T) {
	podman := needTool(t, "podman", "apt-get install podman")
	chroot := needTool(t, "chroot", "coreutils")
	asRoot := rootPrefix(t)
	dir := t.TempDir()
	t.Cleanup(func() { // files of root, of the image's user and (rootless podman) of subordinate ids
		if out, err := exec.Command(asRoot[0], append(asRoot[1:], "rm", "-rf", dir)...).CombinedOutput(); err != nil {
			t.Errorf("rm -rf %s: %v\n%s", dir, err, out)
		}
	})
	// A store of the test's own, vfs (which needs no overlay mount), gone
	// with the test: whatever the machine's podman store holds, and
	// whichever driver it was made with, is left alone.
	store := []string{"--storage-driver", "vfs", "--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run")}
	tag := "localhost/" + product.Name + "-image-test"
	runTool(t, "../..", "make", "--no-print-directory", "-o", "web", "image", "IMAGE="+tag,
		"IMAGE_CONTEXT="+filepath.Join(dir, "context"), "PODMAN="+podman, "PODMAN_FLAGS="+strings.Join(store, " "))

	// The image as podman save writes it: a manifest, the configuration,
	// the layers; the layers unpacked as root, keeping their owners.
	layout, rootfs := filepath.Join(dir, "layout"), filepath.Join(dir, "rootfs")
	for _, d := range []string{layout, rootfs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runTool(t, dir, podman, append(append([]string{"save"}, store...), "-o", "image.tar", tag)...)
	runTool(t, dir, "tar", "-xf", "image.tar", "-C", layout)
	var manifest []struct {
		Config string
		Layers []string
	}
	readJSON(t, filepath.Join(layout, "manifest.json"), &manifest)
	if len(manifest) != 1 {
		t.Fatalf("the saved image's manifest lists %d images, want 1", len(manifest))
	}
	var img imageConfig
	readJSON(t, filepath.Join(layout, manifest[0].Config), &img)
	for _, l := range manifest[0].Layers {
		runTool(t, dir, asRoot[0], append(asRoot[1:], "tar", "--numeric-owner", "-xpf", filepath.Join(layout, l), "-C", rootfs)...)
	}
	cfg := img.Config

	// The user, the environment, the volume, the ports.
	uid, gid, err := userOf(cfg.User)
	if err != nil || uid == 0 || gid == 0 {
		t.Fatalf("the image's user is %q (%v), want numbers, neither root's", cfg.User, err)
	}
	env := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range containerfileEnv(t) {
		if env[k] != v {
			t.Errorf("the image's %s is %q, want Containerfile's %q", k, env[k], v)
		}
	}
	data := env["BRAIN_DATA_DIR"]
	if _, ok := cfg.Volumes[data]; !ok || data == "" {
		t.Errorf("the image's volumes are %v, want its data directory %q", slices.Collect(maps.Keys(cfg.Volumes)), data)
	}
	if u, g, isDir := ownerOf(t, filepath.Join(rootfs, data)); u != uid || g != gid || !isDir {
		t.Errorf("the data directory %s: owner %d:%d, a directory %v; want the image's user's %s", data, u, g, isDir, cfg.User)
	}
	for _, setting := range []string{"BRAIN_ADDR", "BRAIN_METRICS_ADDR"} {
		host, port, err := net.SplitHostPort(env[setting])
		if _, exposed := cfg.ExposedPorts[port+"/tcp"]; err != nil || host != "0.0.0.0" || !exposed {
			t.Errorf("the image's %s is %q, exposing %v; want 0.0.0.0 and an exposed port", setting, env[setting], slices.Collect(maps.Keys(cfg.ExposedPorts)))
		}
	}

	// The files: the binary, where the entrypoint names it, static; the CA
	// certificates, where Go looks first on Linux; /tmp.
	if len(cfg.Entrypoint) != 1 {
		t.Fatalf("the image's entrypoint is %q, want the binary alone", cfg.Entrypoint)
	}
	bin := lookPathIn(rootfs, env["PATH"], cfg.Entrypoint[0])
	if bin == "" {
		t.Fatalf("the entrypoint %q is in no directory of the image's PATH %q", cfg.Entrypoint[0], env["PATH"])
	}
	checkStatic(t, filepath.Join(rootfs, bin))
	const caFile = "/etc/ssl/certs/ca-certificates.crt"
	if pem, err := os.ReadFile(filepath.Join(rootfs, caFile)); err != nil || !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Errorf("the image's %s: %v, want CA certificates", caFile, err)
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "tmp")); err != nil {
		t.Error(err)
	} else if fi.Mode()&(fs.ModeSticky|fs.ModePerm) != fs.ModeSticky|0o777 {
		t.Errorf("the image's /tmp has mode %v, want 1777, sticky and everyone's (SQLite's temporary files: a migration needs them)", fi.Mode())
	}
	var files []string
	if err := filepath.WalkDir(rootfs, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(path, rootfs))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := sorted([]string{bin, caFile}); !slices.Equal(sorted(files), want) {
		t.Errorf("the image holds %q, want only %q (is the build context the repository?)", files, want)
	}
	t.Logf("the image: files %q, user %s, entrypoint %q, command %q, volumes %v, ports %v, environment %q",
		files, cfg.User, cfg.Entrypoint, cfg.Cmd, slices.Collect(maps.Keys(cfg.Volumes)), slices.Collect(maps.Keys(cfg.ExposedPorts)), cfg.Env)

	// The image run: as its user, its environment (but for the
	// listeners' ports, and what the test logs in with) and its command.
	serve := func() *proc {
		kv := maps.Clone(env)
		maps.Copy(kv, map[string]string{
			"BRAIN_ADDR":               "127.0.0.1:0",
			"BRAIN_METRICS_ADDR":       "127.0.0.1:0",
			"BRAIN_ADMIN_PASSWORD":     adminPassword,
			"BRAIN_COOKIE_SECURE":      "false",
			"BRAIN_RATE_LIMIT_SESSION": "10000/s,burst=10000", // a check's polls
		})
		argv := append(slices.Clone(asRoot), "env", "-i")
		for k, v := range kv {
			argv = append(argv, k+"="+v)
		}
		argv = append(append(append(argv, chroot, "--userspec="+cfg.User, rootfs), cfg.Entrypoint...), cfg.Cmd...)
		return startCmd(t, exec.Command(argv[0], argv[1:]...))
	}
	first := serve()
	c := client{t, first.base}
	if r := c.do("GET", "/api/v1/health", nil).want(t, 200, "health"); r.str("status") != "ok" {
		t.Fatalf("health: %s, want status ok", r.raw)
	}
	cookie, _ := sessionCookieOf(t, login(c, "admin", adminPassword).want(t, 200, "admin login"))
	key := "X-API-Key: " + c.do("POST", "/api/v1/apikeys", map[string]string{"name": "image"}, cookie).want(t, 201, "create key").str("key")
	c.do("GET", "/api/v1/auth/me", nil, key).want(t, 200, "me by key")
	var readBacks []func(client, string)
	for _, check := range imageChecks {
		readBacks = append(readBacks, check(c, cookie))
	}
	first.stop()
	if u, g, _ := ownerOf(t, filepath.Join(rootfs, data, product.DatabaseFile)); u != uid || g != gid {
		t.Errorf("the database %s in the volume: owner %d:%d, want the image's user %s", product.DatabaseFile, u, g, cfg.User)
	}

	second := serve()
	c = client{t, second.base}
	c.do("GET", "/api/v1/auth/me", nil, key).want(t, 200, "me by key, after a restart")
	c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 200, "me by session, after a restart")
	for _, readBack := range readBacks {
		readBack(c, cookie)
	}
}

// needTool is the path of the command name; without it, the test skips
// (fails under CI=true, where every tool a test needs must be there).
func needTool(t *testing.T, name, from string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		skipOrFail(t, fmt.Sprintf("%s needs %s (%s): %v", t.Name(), name, from, err))
	}
	return path
}

// rootPrefix is the command that runs the rest of a command line as root:
// env, when the test runs as root, else sudo -n where it needs no password
// (as on GitHub's runners); without either, the test skips (fails under
// CI=true).
func rootPrefix(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() == 0 {
		return []string{"env"}
	}
	if exec.Command("sudo", "-n", "true").Run() == nil {
		return []string{"sudo", "-n"}
	}
	skipOrFail(t, t.Name()+" needs root, or sudo -n, to chroot")
	return nil
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// runTool runs name with args in dir, within 20 minutes (a build on a loaded
// machine), and fails the test with its output if it fails. make's own
// variables stay out: a make running the tests does not pass its jobs on.
func runTool(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out[max(0, len(out)-8000):])
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// userOf reads an image's USER, uid:gid in numbers.
func userOf(user string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		return 0, 0, fmt.Errorf("no group")
	}
	if uid, err = strconv.Atoi(u); err == nil {
		gid, err = strconv.Atoi(g)
	}
	return uid, gid, err
}

// ownerOf is path's owner and group, and whether it is a directory.
func ownerOf(t *testing.T, path string) (uid, gid int, dir bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), fi.IsDir()
}

// lookPathIn is the path inside rootfs of the command name, found as the
// image's runtime finds it: in the directories of path, unless it has a
// slash. It is "" when there is no such file.
func lookPathIn(rootfs, path, name string) string {
	dirs := filepath.SplitList(path)
	if strings.Contains(name, "/") {
		dirs = []string{""}
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(rootfs, d, name)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join("/", d, name)
		}
	}
	return ""
}

// checkStatic fails the test unless file is an ELF file that needs
// nothing to load it: no interpreter (PT_INTERP), no dynamic section, no
// shared library (DT_NEEDED).
func checkStatic(t *testing.T, file string) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatalf("the image's binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the image's binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the image's binary needs %v (%v), want no shared library", libs, err)
	}
}
