package errors_test

import (
	"reflect"
	"strings"
	"testing"
)

// The tests of errors use the standard library only: an importer's go mod
// tidy resolves the modules of these files too, and every package of
// Waybill links this one.

// checkEqual reports got and want, with what names them, when they are not
// deeply equal.
func checkEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// checkContains reports s, named by what, when it does not hold sub.
func checkContains(t testing.TB, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}

// checkNotContains reports s, named by what, when it holds sub.
func checkNotContains(t testing.TB, what, s, sub string) {
	t.Helper()
	if strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it not to contain %q", what, s, sub)
	}
}
