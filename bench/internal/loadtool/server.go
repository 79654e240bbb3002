package loadtool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// A Server is brain running as a child process of a load tool.
type Server struct {
	Cmd  *exec.Cmd
	Addr string // where it listens, from its log
	once sync.Once
	done chan struct{} // closed when it has exited
}

// listening is the line brain logs once it accepts connections.
var listening = regexp.MustCompile(`msg="brain listening" addr=(\S+)`)

// Start starts bin with env added to this process's environment, its
// log in dir/brain.log, and waits up to 60 s until it listens. tool
// names the load tool in errors.
func Start(tool, bin, dir string, env []string) (*Server, error) {
	logPath := filepath.Join(dir, "brain.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf // the child writes its log itself: no copying in this process
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Cmd: cmd, done: make(chan struct{})}
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(s.done) }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		b, _ := os.ReadFile(logPath)
		if m := listening.FindSubmatch(b); m != nil {
			s.Addr = string(m[1])
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s: brain exited before listening (%v); its log:\n%s", tool, exitErr, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.Stop()
	return nil, errors.New(tool + ": brain did not listen within 60 s; see its log")
}

// Stop kills the server (a graceful shutdown would close every stream and
// log each) and waits until it has exited, so its database connections
// are closed.
func (s *Server) Stop() {
	s.once.Do(func() {
		_ = s.Cmd.Process.Kill()
		<-s.done
	})
}
