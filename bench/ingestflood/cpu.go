package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// A cpuReading is the CPU time spent so far by each party of a run.
type cpuReading struct {
	server, self, db time.Duration
	busy, total      int64 // the machine's busy and total jiffies (/proc/stat)
}

// readCPU reads the CPU time of the server, of this process, of the
// PostgreSQL backends serving database dbName ("" for none), and of the
// whole machine.
func readCPU(serverPID int, dbName string) cpuReading {
	r := cpuReading{server: loadtool.ProcCPU(serverPID), self: selfCPU()}
	if dbName != "" {
		r.db = backendsCPU(dbName)
	}
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	for i := 1; i < len(f); i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		if i <= 8 { // user nice system idle iowait irq softirq steal; guest is inside user
			r.total += v
			if i != 4 && i != 5 {
				r.busy += v
			}
		}
	}
	return r
}

// backendsCPU is the CPU time of the PostgreSQL backends connected to
// database dbName, found by their process titles ("postgres: ... user
// dbName host(port) state"). A backend that exited is not counted: the
// server's pool keeps its connections.
func backendsCPU(dbName string) time.Duration {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var sum time.Duration
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("postgres: ")) || !bytes.Contains(b, []byte(" "+dbName+" ")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		sum += loadtool.ProcCPU(pid)
	}
	return sum
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
