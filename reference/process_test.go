package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveArgs returns the arguments that start the serve command on a free
// port with every rate limit off, followed by extra: those of the tests
// that load the built binary.
func serveArgs(extra ...string) []string {
	return append([]string{"serve", "--addr", "127.0.0.1:0", "--rate-rest", "0", "--rate-token", "0", "--rate-edge", "0"}, extra...)
}

// proc is a running process of the built binary whose end the test
// decides: stop (SIGTERM) or kill9.
type proc struct {
	url    string // printed by serve; empty for other commands
	logs   *syncBuffer
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited
	err    error         // cmd.Wait's error, valid once exited is closed
}

// binaryEnv returns this process's environment without its WAYBILL_*
// variables, plus vars: the tests configure the binary explicitly.
func binaryEnv(vars map[string]string) []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "WAYBILL_") })
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// startProc runs bin with args and the environment of binaryEnv(vars),
// waits for the address it prints, and kills it in t.Cleanup if it still
// runs then.
func startProc(t *testing.T, bin string, vars map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = binaryEnv(vars)
	stdoutR, stdoutW := io.Pipe()
	cmd.Stdout = stdoutW
	p := &proc{logs: &syncBuffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = p.logs
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		_ = stdoutW.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	p.url = readURL(t, stdoutR)
	return p
}

// startProcess runs bin with args like startProc, and stops it with
// SIGTERM when t ends, checking a clean exit. It returns the server's URL
// and its log.
func startProcess(t *testing.T, bin string, vars map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	p := startProc(t, bin, vars, args...)
	t.Cleanup(func() { assert.NoError(t, p.stop(t), "exit after SIGTERM; stderr:\n%s", p.logs) })
	return p.url, p.logs
}

// stop sends SIGTERM and returns the exit error, or fails t when the
// process does not exit within wait.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
		return p.err
	case <-time.After(wait):
		t.Fatalf("no exit within %v of SIGTERM; stderr:\n%s", wait, p.logs)
		return nil
	}
}

// kill9 sends SIGKILL and waits until the process is gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.exited:
	case <-time.After(wait):
		t.Fatal("the process did not die after SIGKILL")
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the process ended by SIGKILL, not by %v; stderr:\n%s", p.cmd.ProcessState, p.logs)
}

// memory returns a line of /proc/PID/status in KiB: VmRSS (resident now)
// or VmHWM (the peak).
func (p *proc) memory(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		require.NoError(t, err, "%s line %q", field, sc.Text())
		return kb
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no %s in /proc/PID/status", field)
	return 0
}

// errorLines returns the log lines of level ERROR.
func (p *proc) errorLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range logLines(t, p.logs.String()) {
		if l["level"] == "ERROR" {
			out = append(out, l)
		}
	}
	return out
}
