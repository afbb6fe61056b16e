package testdb

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithSearchPath(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no query", "postgres://u@h:5432/db", "postgres://u@h:5432/db?search_path=t_1"},
		{"query", "postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?search_path=t_1&sslmode=disable"},
		{"replaces search_path", "postgresql://u:p@h/db?search_path=public&x=1", "postgresql://u:p@h/db?search_path=t_1&x=1"},
		{"empty query", "postgres://h/db?", "postgres://h/db?search_path=t_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withSearchPath(tt.in, "t_1")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// recorder is a testing.TB that records Skip and Fatal and stops the goroutine, as the
// real ones do.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls f with r in a goroutine of its own, so that Goexit ends only that goroutine.
func (r *recorder) run(f func(testing.TB)) {
	var wg sync.WaitGroup
	wg.Go(func() { f(r) })
	wg.Wait()
}

func TestServiceMissingSkipsOrFailsInCI(t *testing.T) {
	const msg = "testdb: no Thing: WAYBILL_TEST_THING_URL is unset and testcontainers could not start a container: no docker"
	missing := func() (string, int, string, error) { return "", 0, msg, nil }

	t.Setenv(envCI, "")
	var s service[int]
	r := &recorder{TB: t}
	r.run(func(tb testing.TB) { s.get(tb, missing) })
	assert.Equal(t, msg, r.skipped)
	assert.Empty(t, r.fatal)

	t.Setenv(envCI, "true")
	r = &recorder{TB: t}
	r.run(func(tb testing.TB) { s.get(tb, missing) })
	assert.Equal(t, msg, r.fatal)
	assert.Empty(t, r.skipped)
}

func TestServiceBrokenAlwaysFails(t *testing.T) {
	t.Setenv(envCI, "")
	calls := 0
	broken := func() (string, int, string, error) { calls++; return "", 0, "", errors.New("does not answer") }
	var s service[int]
	for range 2 {
		r := &recorder{TB: t}
		r.run(func(tb testing.TB) { s.get(tb, broken) })
		assert.Equal(t, "does not answer", r.fatal)
		assert.Empty(t, r.skipped)
	}
	assert.Equal(t, 1, calls, "setup runs once per process")
}

func TestServiceReady(t *testing.T) {
	var s service[int]
	url, conn := s.get(t, func() (string, int, string, error) { return "thing://x", 7, "", nil })
	assert.Equal(t, "thing://x", url)
	assert.Equal(t, 7, conn)
}
