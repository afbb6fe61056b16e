package testdb

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// readmeSection is the part of the README that says how to give the tests PostgreSQL and
// Redis.
const readmeSection = `README.md, "Testing against your own PostgreSQL and Redis"`

// Main runs the tests of a package and exits with their status. When tests skipped for
// want of PostgreSQL or Redis, it first writes one line that says how many and how to run
// them: to the terminal (/dev/tty), since go test shows the output of a passing package
// only with -v, or to standard output under -v or when there is no terminal. A package
// whose tests use this package calls it from its TestMain:
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
//
// A run that skipped such tests is not cached by go test either: the tests then depend
// on whether Docker answers, which go test's cache cannot see, so a later run after
// Docker was started, or after a rerun of the same command, runs them again and says
// so again.
func Main(m *testing.M) {
	code := m.Run()
	if line := skipReport(packageDir(), pg.skipped.Load(), rds.skipped.Load()); line != "" {
		uncached()
		report(line)
	}
	os.Exit(code)
}

// skipReport returns the line that [Main] writes for the package in dir, whose tests
// skipped postgres times for want of PostgreSQL and redis times for want of Redis, or ""
// when none skipped.
func skipReport(dir string, postgres, redis int64) string {
	var want, vars string
	switch {
	case postgres > 0 && redis > 0:
		want = fmt.Sprintf("PostgreSQL (%d) or Redis (%d)", postgres, redis)
		vars = envDatabaseURL + " and " + envRedisURL
	case postgres > 0:
		want, vars = "PostgreSQL", envDatabaseURL
	case redis > 0:
		want, vars = "Redis", envRedisURL
	default:
		return ""
	}
	n := postgres + redis
	tests, them := "tests", "them"
	if n == 1 {
		tests, them = "test", "it"
	}
	return fmt.Sprintf("%s: %d %s skipped for want of %s; to run %s, set %s (%s) or start Docker",
		dir, n, tests, want, them, vars, readmeSection)
}

// report writes line where the person who ran go test sees it. go test shows the output
// of a passing package only under -v, so: to standard output under -v; otherwise to the
// terminal; without one (a CI log, a pipe), to the standard error of the go command
// that runs the test binary; and to standard output when none of these can be opened
// (go test shows it if the package fails).
func report(line string) {
	var w io.Writer = os.Stdout
	if !testing.Verbose() {
		if out := outsideGoTest(); out != nil {
			defer out.Close()
			w = out
		}
	}
	fmt.Fprintln(w, line)
}

// outsideGoTest opens the terminal, or else the standard error of the go command that
// started this test binary (its parent process, found through Linux's /proc), for
// writing; nil when neither can be opened.
func outsideGoTest() *os.File {
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return tty
	}
	parent := fmt.Sprintf("/proc/%d/", os.Getppid())
	if exe, err := os.Readlink(parent + "exe"); err != nil || filepath.Base(exe) != "go" {
		return nil
	}
	f, err := os.OpenFile(parent+"fd/2", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}

// uncached keeps go test from caching the run. go test caches a passing run together
// with the files and environment variables the tests read, from a log the test binary
// writes to the file named by -test.testlogfile (only when the run may be cached); a line
// it does not know in that log makes it keep the run out of the cache. Docker's coming
// up is no input go test sees, so without this a cached run would skip again, silently,
// after Docker was started.
func uncached() {
	f := flag.Lookup("test.testlogfile")
	if f == nil || f.Value.String() == "" {
		return
	}
	log, err := os.OpenFile(f.Value.String(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer log.Close()
	_, _ = io.WriteString(log, "testdb-skipped tests skipped for want of a service; do not cache\n")
}

// packageDir returns the directory of the running test, the package's, as a path from the
// module's root (./reference), or the absolute path when no go.mod is above it.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "this package"
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, wd)
			if err != nil {
				return wd
			}
			if rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return wd
		}
		root = parent
	}
}
