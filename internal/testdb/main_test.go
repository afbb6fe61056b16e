package testdb

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func TestSkipReport(t *testing.T) {
	const how = `; to run them, set %s (README.md, "Testing against your own PostgreSQL and Redis") or start Docker`
	tests := []struct {
		name            string
		postgres, redis int64
		want            string
	}{
		{"none", 0, 0, ""},
		{"one PostgreSQL", 1, 0, "./query: 1 test skipped for want of PostgreSQL" +
			strings.Replace(strings.Replace(how, "them", "it", 1), "%s", "WAYBILL_TEST_DATABASE_URL", 1)},
		{"Redis", 0, 3, "./query: 3 tests skipped for want of Redis" +
			strings.Replace(how, "%s", "WAYBILL_TEST_REDIS_URL", 1)},
		{"both", 80, 26, "./query: 106 tests skipped for want of PostgreSQL (80) or Redis (26)" +
			strings.Replace(how, "%s", "WAYBILL_TEST_DATABASE_URL and WAYBILL_TEST_REDIS_URL", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, skipReport("./query", tt.postgres, tt.redis))
		})
	}
}

func TestServiceMissingCountsSkips(t *testing.T) {
	t.Setenv(envCI, "")
	var s service[int]
	missing := func() (string, int, string, error) { return "", 0, "no Thing", nil }
	for range 3 {
		(&recorder{TB: t}).run(func(tb testing.TB) { s.get(tb, missing) })
	}
	assert.EqualValues(t, 3, s.skipped.Load())

	t.Setenv(envCI, "true")
	(&recorder{TB: t}).run(func(tb testing.TB) { s.get(tb, missing) })
	assert.EqualValues(t, 3, s.skipped.Load(), "a test that fails under CI is no skip")
}

func TestPackageDir(t *testing.T) {
	assert.Equal(t, "./internal/testdb", packageDir())
}

// TestEveryPackageReportsSkips checks that the tests of every package of the module that
// use this package run with Main, so that none skips without saying so.
func TestEveryPackageReportsSkips(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	uses := map[string]bool{}  // directory: a test file imports testdb
	calls := map[string]bool{} // directory: a test file calls testdb.Main
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if strings.Contains(string(src), `"github.com/waybillhq/waybill/internal/testdb"`) {
			uses[dir] = true
		}
		if strings.Contains(string(src), "Main(m)") {
			calls[dir] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, uses)
	for dir := range uses {
		assert.True(t, calls[dir], "the tests of ./%s use testdb but no TestMain calls testdb.Main(m)", dir)
	}
}

// TestSkipsAnnouncedWithoutTerminal runs go test as a CI job or a pipe would, without -v
// and without a controlling terminal, on packages whose tests find neither PostgreSQL
// nor Docker: the line that says they skipped still reaches the person reading go test's
// output, for this package and for examples/integrationtest, which reports on its own.
func TestSkipsAnnouncedWithoutTerminal(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	gobin, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), gobin, "test", "-count=1", "-run", "^(TestPostgresSchemaLifecycle|TestCreate)$",
		"./internal/testdb", "./examples/integrationtest")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != envCI && name != envDatabaseURL && name != envRedisURL {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// No Docker either: testcontainers finds no daemon at this socket.
	cmd.Env = append(cmd.Env, "DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal: /dev/tty does not open
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	all := stdout.String() + stderr.String()
	assert.Contains(t, all, "./internal/testdb: 1 test skipped for want of PostgreSQL", all)
	assert.Contains(t, all, "examples/integrationtest: 1 test skipped for want of PostgreSQL", all)
}
