package conditional

import (
	"strings"
	"testing"
)

// BenchmarkETag is the cost of the ETag of a single-record answer: a hash
// of a record of 600 bytes, about the size of a quotation.
func BenchmarkETag(b *testing.B) {
	record := []byte(`{"id":"0192e5b4-8f3a-7c1d-9e2f-3a4b5c6d7e8f",` + strings.Repeat(`"field":"a value of the record",`, 17) + `"x":1}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(record)))
	for b.Loop() {
		_ = ETag(record)
	}
}

func TestListMatches(t *testing.T) {
	t.Parallel()
	const tag = `"abc"`
	tests := []struct {
		list         List
		strong, weak bool
	}{
		{`"abc"`, true, true},
		{`W/"abc"`, false, true},
		{`"x", "abc"`, true, true},
		{` "x" ,W/"abc" `, false, true},
		{`*`, true, true},
		{`"abcd"`, false, false},
		{`abc`, false, false},
		{``, false, false},
	}
	for _, tt := range tests {
		if got := tt.list.Matches(tag, false); got != tt.strong {
			t.Errorf("%q strong: %v, want %v", tt.list, got, tt.strong)
		}
		if got := tt.list.Matches(tag, true); got != tt.weak {
			t.Errorf("%q weak: %v, want %v", tt.list, got, tt.weak)
		}
	}
}
