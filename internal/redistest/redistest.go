// Package redistest starts real Redis deployments for tests: a Redis Cluster
// ([StartCluster]) and a master with a replica watched by three Sentinels
// ([StartSentinel]), each process a redis-server of its own on free ports
// of 127.0.0.1, with its files in a temporary directory of the test, and
// stopped when the test ends. Tests kill a node ([Node.Kill]) to watch a
// failover.
//
// The binaries are Debian's redis-server and redis-cli (package
// redis-server); the Sentinels run as redis-server --sentinel, which is
// what Debian's redis-sentinel is. When they are missing the test is
// skipped, or fails when the environment variable CI is set, as
// internal/testdb does for PostgreSQL and Redis.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timings of the deployments: short, so that a failover takes seconds.
const (
	// NodeTimeout is the cluster-node-timeout of a cluster's nodes and the
	// down-after-milliseconds of the Sentinels.
	NodeTimeout = 1000 * time.Millisecond
	// sentinelFailoverTimeout is the Sentinels' failover-timeout.
	sentinelFailoverTimeout = 3 * time.Second
	// startTimeout bounds how long a deployment takes to be ready.
	startTimeout = 30 * time.Second
	// MasterName is the name under which the Sentinels watch the master.
	MasterName = "waybill"
)

// Node is one redis-server process.
type Node struct {
	// Addr is its host:port.
	Addr string
	cmd  *exec.Cmd
	once sync.Once
	done chan struct{}
}

// Kill ends the process at once (SIGKILL), as a crash would, and waits for
// it to exit.
func (n *Node) Kill() {
	n.once.Do(func() {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
	})
	<-n.done
}

// binaries returns the path of redis-server and redis-cli, or skips t (fails it
// under CI) when either is missing.
func binaries(t testing.TB) (server, cli string) {
	t.Helper()
	server, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		msg := "redistest: redis-server and redis-cli are needed (Debian: apt-get install redis-server)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return server, cli
}

// freePort returns a port of 127.0.0.1 that nothing listens on, and, with
// bus, whose port+10000 (a cluster node's bus) is free too.
func freePort(t testing.TB, bus bool) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !bus {
			_ = ln.Close()
			return port
		}
		if port+10000 > 65535 {
			_ = ln.Close()
			continue
		}
		ln2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = ln2.Close()
		return port
	}
	t.Fatal("redistest: no free port")
	return 0
}

// start starts redis-server with args (a config file first, or none) and
// stops it when t ends.
func start(t testing.TB, server, dir, name string, port int, args ...string) *Node {
	t.Helper()
	log := filepath.Join(dir, name+".log")
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", log, "--daemonize", "no", "--repl-diskless-sync-delay", "0")
	cmd := exec.Command(server, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start %s: %v", name, err)
	}
	n := &Node{Addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(log); err == nil {
				t.Logf("redistest: log of %s:\n%s", name, tail(string(b), 40))
			}
		}
	})
	waitFor(t, name+" answers", func(ctx context.Context) (bool, error) {
		select {
		case <-n.done:
			return false, fmt.Errorf("redistest: %s exited; its log %s", name, log)
		default:
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		defer c.Close()
		return c.Ping(ctx).Err() == nil, nil
	})
	return n
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor calls check every 50 ms until it reports true, failing t after
// startTimeout or at its first error.
func waitFor(t testing.TB, what string, check func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := WaitFor(startTimeout, check); err != nil {
		t.Fatalf("redistest: %s: %v", what, err)
	}
}

// WaitFor calls check every 50 ms until it reports true, and returns nil
// then; its first error, or an error after timeout.
func WaitFor(timeout time.Duration, check func(ctx context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, err := check(ctx)
		cancel()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// info returns the fields of INFO section of the server at addr.
func info(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	return fields(s), nil
}

// fields parses the key:value lines of INFO or CLUSTER INFO.
func fields(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			m[k] = v
		}
	}
	return m
}
