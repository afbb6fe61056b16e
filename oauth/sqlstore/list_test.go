package sqlstore

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDecodeList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []string
		plain      bool // split without encoding/json
	}{
		{"empty", `[]`, []string{}, false},
		{"null", `null`, []string{}, false},
		{"one", `["svc:quotations:read"]`, []string{"svc:quotations:read"}, true},
		{"two", `["a","b"]`, []string{"a", "b"}, true},
		{"an empty string", `["","b"]`, []string{"", "b"}, true},
		{"a comma inside a string", `["a,b","c"]`, []string{"a,b", "c"}, true},
		{"utf-8", `["Zürich"]`, []string{"Zürich"}, true},
		{"an escape", `["a\"b"]`, []string{`a"b`}, false},
		{"an escaped ampersand, as json.Marshal writes it", `["https://x.test/?a=1\u0026b=2"]`, []string{"https://x.test/?a=1&b=2"}, false},
		{"spaces between tokens", `[ "a" , "b" ]`, []string{"a", "b"}, false},
		{"invalid UTF-8, which json.Unmarshal replaces", "[\"a\xffb\"]", []string{"a\uFFFDb"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			if err := decodeList([]byte(tt.text), &got); err != nil {
				t.Fatalf("decodeList(%q) = %v, want no error", tt.text, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeList(%q) = %#v, want %#v", tt.text, got, tt.want)
			}
			if _, ok := plainList([]byte(tt.text)); ok != tt.plain {
				t.Errorf("plainList(%q) ok = %v, want %v", tt.text, ok, tt.plain)
			}
		})
	}

	for _, bad := range []string{`["a",]`, `["a"`, `["a" "b"]`, "[\"a\x01\"]", `["a\x"]`, `[1]`, `{}`, `[`, `["a"]x`} {
		var got []string
		if err := decodeList([]byte(bad), &got); err == nil {
			t.Errorf("decodeList(%q) = %#v, nil, want an error", bad, got)
		}
	}
}

// FuzzDecodeList holds decodeList to json.Unmarshal's answers: the same
// strings for every text json.Unmarshal takes as an array of strings (nil
// as an empty list), an error for every text it refuses.
func FuzzDecodeList(f *testing.F) {
	for _, seed := range []string{`[]`, `null`, `["a"]`, `["a","b"]`, `["","x"]`, `["a\"b"]`, `["\u00e9"]`,
		`["a",]`, "[\"a\x01\"]", "[\"\xff\"]", `[ "a" ]`, `["a","b",""]`, `[""]`, `["\\"]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var want []string
		wantErr := json.Unmarshal(text, &want)
		if wantErr == nil && want == nil {
			want = []string{}
		}
		var got []string
		err := decodeList(text, &got)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeList(%q) error = %v, json.Unmarshal's = %v", text, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeList(%q) = %#v, json.Unmarshal's = %#v", text, got, want)
		}
	})
}

// BenchmarkDecodeList is an app's scopes decoded by decodeList beside
// json.Unmarshal, the floor it replaces for plain lists.
func BenchmarkDecodeList(b *testing.B) {
	text := []byte(`["svc:quotations:read","svc:quotations:write","svc:orders:read"]`)
	b.Run("decodeList", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l []string
			if err := decodeList(text, &l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l []string
			if err := json.Unmarshal(text, &l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
