package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execMainEnv, set to 1 in a test binary's environment, makes TestMain run
// main instead of the tests: the test binary is then brain itself, in a
// process of its own, whose death (kill -9) the test survives. Re-running
// the test binary needs no toolchain and no second link of brain, and a
// binary built with -race runs the servers with the race detector too.
const execMainEnv = "BRAIN_TEST_EXEC_MAIN"

// proc is brain running in a process of its own, started by startProc.
type proc struct {
	tb   testing.TB
	cmd  *exec.Cmd
	base string // http://host:port
	logs *logPipe
	done chan struct{} // closed when the process has ended
	err  error         // Wait's error, once done is closed
}

// startProc starts brain serve in a new process with kv (completed by
// serveEnv) as its whole environment, and waits until it listens. It is
// stopped with SIGTERM, if still running, when the test ends; it must
// then exit cleanly, and must never have reported a data race.
func startProc(tb testing.TB, kv map[string]string) *proc {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	kv = serveEnv(tb, kv)
	cmd := exec.Command(exe)
	cmd.Env = []string{execMainEnv + "=1"}
	for k, v := range kv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return startCmd(tb, cmd)
}

// startCmd starts cmd, brain serve by some means (startProc's, or
// TestImage's chroot into the image), and waits until it logs that it
// listens. It is stopped as startProc says when the test ends.
func startCmd(tb testing.TB, cmd *exec.Cmd) *proc {
	tb.Helper()
	p := &proc{tb: tb, cmd: cmd, logs: newLogPipe(), done: make(chan struct{})}
	p.cmd.Stderr = p.logs.w
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.logs.close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stop()
		if strings.Contains(p.logs.String(), "WARNING: DATA RACE") {
			tb.Errorf("brain (pid %d) reported a data race:\n%s", p.cmd.Process.Pid, p.logs)
		}
	})
	select {
	case addr := <-p.logs.addr:
		p.base = "http://" + addr
		return p
	case <-p.done:
		tb.Fatalf("brain exited before listening: %v\n%s", p.err, p.logs)
	case <-time.After(serverStart):
		tb.Fatalf("brain did not log that it listens within %v (settings read, storage opened and migrated, "+
			"the listeners bound):\n%s", serverStart, p.logs)
	}
	return nil
}

// kill ends the process with SIGKILL, as a crash would: nothing of brain
// runs after it, no shutdown, no flush.
func (p *proc) kill() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.tb.Fatal(err)
	}
	<-p.done
}

// stop asks the process to shut down (SIGTERM) and waits for it; it must
// exit with status 0, unless it had been killed.
func (p *proc) stop() {
	p.tb.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			p.tb.Errorf("brain exited with %v after SIGTERM, want status 0:\n%s", p.err, p.logs)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.tb.Errorf("brain did not exit within 30s of SIGTERM:\n%s", p.logs)
	}
}

// dumpGoroutinesOnSignal makes a brain process started by startProc write
// every goroutine's stack to its log on SIGUSR1, between lines that
// goroutineCreators finds: what a soak shows when goroutines grow.
func dumpGoroutinesOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			buf := make([]byte, 8<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "goroutine dump begins\n%s\ngoroutine dump ends\n", buf[:n])
		}
	}()
}

// goroutineCreators has p dump its goroutines and counts them by the
// function that created each.
func goroutineCreators(t *testing.T, p *proc) map[string]int {
	t.Helper()
	before := strings.Count(p.logs.String(), "goroutine dump ends")
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); strings.Count(p.logs.String(), "goroutine dump ends") == before; {
		if time.Now().After(deadline) {
			t.Fatal("no goroutine dump within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	logs := p.logs.String()
	dump := logs[strings.LastIndex(logs, "goroutine dump begins"):strings.LastIndex(logs, "goroutine dump ends")]
	counts := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		creator := "(none)"
		if _, after, ok := strings.Cut(g, "\ncreated by "); ok {
			creator, _, _ = strings.Cut(after, " in goroutine")
			creator, _, _ = strings.Cut(creator, "\n")
		}
		counts[creator]++
	}
	return counts
}
