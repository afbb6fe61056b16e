package testdb

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
