package query_test

import (
	"testing"

	"github.com/waybillhq/waybill/query"
)

func TestCanonicalUUID(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{name: "lower case", in: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b", want: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b", ok: true},
		{name: "upper case", in: "0193A5B2-7C1D-7E4F-8A9B-0C1D2E3F4A5B", want: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b", ok: true},
		{name: "mixed case", in: "0193a5B2-7c1D-7e4f-8A9b-0c1d2e3f4a5B", want: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b", ok: true},
		{name: "empty", in: ""},
		{name: "no hyphens", in: "0193a5b27c1d7e4f8a9b0c1d2e3f4a5b"},
		{name: "braces", in: "{0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b}"},
		{name: "urn", in: "urn:uuid:0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b"},
		{name: "hyphen misplaced", in: "0193a5b27-c1d-7e4f-8a9b-0c1d2e3f4a5b"},
		{name: "not hex", in: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5g"},
		{name: "too long", in: "0193a5b2-7c1d-7e4f-8a9b-0c1d2e3f4a5b0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := query.CanonicalUUID(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("CanonicalUUID(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
