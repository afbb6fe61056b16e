//go:build unix

package main

import (
	"bufio"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// readmeSection is the section of README.md whose commands TestREADMEWithATokenService
// runs.
const readmeSection = "## With a real token service"

// TestREADMEWithATokenService runs the sh blocks of the README's section on the token
// service, one after the other in one bash with set -euo pipefail, as a reader pastes
// them: it builds both programs, creates an organization, a branch and an app, starts
// both services, gets a token and calls the API with it. The commands run in a
// directory of their own (their files, bin/ and the SQLite databases, land there), with
// go run from the module's root, and on free ports instead of 8080 and 8082.
//
// The subtest sqlite runs them as written; postgres runs them with the token service on
// a PostgreSQL schema of its own (testdb.PostgresURL) instead of sqlite://ref.db.
func TestREADMEWithATokenService(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		runREADME(t, func(script string) string { return script })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		u := testdb.PostgresURL(t)
		runREADME(t, func(script string) string {
			require.Contains(t, script, "sqlite://ref.db")
			return strings.ReplaceAll(script, "sqlite://ref.db", "'"+u+"'")
		})
	})
}

// runREADME runs the README's section on the token service, changed by edit.
func runREADME(t *testing.T, edit func(script string) string) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "openssl", "sed", "grep", "seq"} {
		if _, err := exec.LookPath(tool); err != nil {
			require.Empty(t, os.Getenv("CI"), "the README's commands need %s", tool)
			t.Skipf("%s is not installed", tool)
		}
	}
	blocks := readmeBlocks(t, "README.md", readmeSection)
	require.GreaterOrEqual(t, len(blocks), 4, "the sh blocks of %q", readmeSection)
	script := edit(strings.Join(blocks, "\n"))
	for _, port := range []string{"8080", "8082"} {
		require.Contains(t, script, "127.0.0.1:"+port)
		script = strings.ReplaceAll(script, "127.0.0.1:"+port, "127.0.0.1:"+freePort(t))
	}

	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	// go runs in the module's root, with the file of -o in the test's directory, where
	// everything else runs; a failing command ends the script, and its end the services
	// it started.
	prelude := `go() {
	local args=()
	while (($#)); do
		if [[ $1 == -o ]]; then args+=(-o "$PWD/$2"); shift 2; else args+=("$1"); shift; fi
	done
	` + strconv.Quote(goTool) + ` -C ` + strconv.Quote(root) + ` "${args[@]}"
}
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
`
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", prelude+script)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "WAYBILL_") }),
		"PWD="+dir)
	// The services run in the script's process group, which is killed if the script
	// is: no process outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	require.NoError(t, err, "the README's commands:\n%s\noutput:\n%s", script, out)
	t.Logf("output of the README's commands:\n%s", out)
	assert.Contains(t, string(out), `"vehicle_plate":"B-TR 1042"`, "the created inspection and the list show it:\n%s", out)
	assert.Equal(t, 2, strings.Count(string(out), `"vehicle_plate":"B-TR 1042"`), "%s", out)
}

// readmeBlocks returns the fenced sh and bash blocks of the section of the Markdown file
// path that starts with the heading line heading, up to the next heading of its level.
func readmeBlocks(t *testing.T, path, heading string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	level := heading[:strings.IndexByte(heading, ' ')+1] // "## "
	var blocks []string
	var block strings.Builder
	in, fenced := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case fenced && line == "```":
			blocks = append(blocks, block.String())
			block.Reset()
			fenced = false
		case fenced:
			block.WriteString(line + "\n")
		case line == heading:
			in = true
		case in && strings.HasPrefix(line, level):
			return blocks
		case in && (line == "```sh" || line == "```bash"):
			fenced = true
		}
	}
	require.True(t, in, "%s has no section %q", path, heading)
	return blocks
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
