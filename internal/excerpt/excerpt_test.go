package excerpt_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/excerpt"
)

func TestCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{name: "short", s: "abc", n: 5, want: "abc"},
		{name: "exact", s: "abcde", n: 5, want: "abcde"},
		{name: "long", s: "abcdef", n: 5, want: "abcde…"},
		{name: "empty", s: "", n: 0, want: ""},
		{name: "zero", s: "a", n: 0, want: "…"},
		// é is two bytes: a cut inside it keeps the character out.
		{name: "inside a character", s: "abcdé", n: 5, want: "abcd…"},
		{name: "after a character", s: "abcéd", n: 5, want: "abcé…"},
		{name: "four-byte character", s: "a😀b", n: 3, want: "a…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := excerpt.Cut(tt.s, tt.n)
			assert.Equal(t, tt.want, got)
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, len(strings.TrimSuffix(got, "…")), tt.n)
		})
	}
}
