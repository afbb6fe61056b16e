package netguard_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checker holds the few assertions the tests of this package make, so that
// the package, which uses the standard library only, keeps its tests on
// it too (an importer's "go mod tidy" resolves them). expect reports a
// failure and goes on (t.Errorf); must stops the test (t.Fatalf).
type checker struct{ fatal bool }

var (
	expect = checker{}
	must   = checker{fatal: true}
)

func (c checker) fail(t testing.TB, msgAndArgs []any, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if len(msgAndArgs) > 0 {
		msg += ": " + fmt.Sprint(msgAndArgs...)
	}
	if c.fatal {
		t.Fatal(msg)
	}
	t.Error(msg)
}

func (c checker) NoError(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		c.fail(t, msgAndArgs, "unexpected error: %v", err)
	}
}

func (c checker) Error(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err == nil {
		c.fail(t, msgAndArgs, "no error")
	}
}

func (c checker) ErrorIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		c.fail(t, msgAndArgs, "error %v is not %v", err, target)
	}
}

func (c checker) NotErrorIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if errors.Is(err, target) {
		c.fail(t, msgAndArgs, "error %v is %v", err, target)
	}
}

func (c checker) Equal(t testing.TB, want, got any, msgAndArgs ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		c.fail(t, msgAndArgs, "got %#v, want %#v", got, want)
	}
}

func (c checker) Contains(t testing.TB, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if !strings.Contains(s, sub) {
		c.fail(t, msgAndArgs, "%q does not contain %q", s, sub)
	}
}

func (c checker) NotContains(t testing.TB, s, sub string, msgAndArgs ...any) {
	t.Helper()
	if strings.Contains(s, sub) {
		c.fail(t, msgAndArgs, "%q contains %q", s, sub)
	}
}

func (c checker) True(t testing.TB, v bool, msgAndArgs ...any) {
	t.Helper()
	if !v {
		c.fail(t, msgAndArgs, "false")
	}
}

func (c checker) False(t testing.TB, v bool, msgAndArgs ...any) {
	t.Helper()
	if v {
		c.fail(t, msgAndArgs, "true")
	}
}

func (c checker) Less(t testing.TB, a, b time.Duration, msgAndArgs ...any) {
	t.Helper()
	if a >= b {
		c.fail(t, msgAndArgs, "%v is not less than %v", a, b)
	}
}

func (c checker) Nil(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsNil() {
		c.fail(t, msgAndArgs, "%#v is not nil", v)
	}
}

func (c checker) NotNil(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v == nil || reflect.ValueOf(v).IsNil() {
		c.fail(t, msgAndArgs, "nil")
	}
}

func (c checker) NotZero(t testing.TB, v any, msgAndArgs ...any) {
	t.Helper()
	if v == nil || reflect.ValueOf(v).IsZero() {
		c.fail(t, msgAndArgs, "%#v is zero", v)
	}
}
