package idempotency

import (
	"net/http"
	"strings"
	"testing"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
)

func TestKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		values  []string
		key     string
		ok, bad bool
	}{
		{name: "none"},
		{name: "bare", values: []string{"8e03978e-40d5"}, key: "8e03978e-40d5", ok: true},
		{name: "quoted", values: []string{`"8e03978e-40d5"`}, key: "8e03978e-40d5", ok: true},
		{name: "spaces around", values: []string{"  k1 "}, key: "k1", ok: true},
		{name: "longest", values: []string{strings.Repeat("k", MaxKeyLen)}, key: strings.Repeat("k", MaxKeyLen), ok: true},
		{name: "too long", values: []string{strings.Repeat("k", MaxKeyLen+1)}, bad: true},
		{name: "empty", values: []string{""}, bad: true},
		{name: "empty quoted", values: []string{`""`}, bad: true},
		{name: "inner space", values: []string{"a b"}, bad: true},
		{name: "quote inside", values: []string{`a"b`}, bad: true},
		{name: "backslash", values: []string{`a\b`}, bad: true},
		{name: "not ASCII", values: []string{"clé"}, bad: true},
		{name: "twice", values: []string{"a", "b"}, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := http.NewRequest(http.MethodPost, "/", nil)
			for _, v := range tc.values {
				r.Header.Add("Idempotency-Key", v)
			}
			key, ok, err := Key(r)
			if tc.bad {
				if err == nil {
					t.Fatalf("Key(%q) = %q, want an error", tc.values, key)
				}
				return
			}
			if err != nil || ok != tc.ok || key != tc.key {
				t.Fatalf("Key(%q) = %q, %v, %v; want %q, %v", tc.values, key, ok, err, tc.key, tc.ok)
			}
		})
	}
}

// Parts are separated: moving a byte from one part to the next, or into
// the body, gives another fingerprint.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for name, fp := range map[string]string{
		"a|bc|":  Fingerprint(nil, "a", "bc"),
		"ab|c|":  Fingerprint(nil, "ab", "c"),
		"ab||c":  Fingerprint([]byte("c"), "ab"),
		"ab|c|x": Fingerprint([]byte("x"), "ab", "c"),
	} {
		if other, dup := seen[fp]; dup {
			t.Fatalf("%s and %s share a fingerprint", name, other)
		}
		seen[fp] = name
	}
}

// A key belongs to the token's organization and client, and to its user
// unless the token is a client-credentials token.
func TestOwnerOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		claims bearer.Claims
		want   Owner
	}{
		{"client credentials", bearer.Claims{Subject: "app-1", ClientID: "c1", Grant: bearer.GrantClientCredentials, BranchIDs: []string{}},
			Owner{OrganizationID: "o1", ClientID: "c1"}},
		{"authorization code", bearer.Claims{Subject: "user-1", ClientID: "c1", Grant: bearer.GrantAuthorizationCode},
			Owner{OrganizationID: "o1", ClientID: "c1", UserID: "user-1"}},
		{"authorization code without its grant claim", bearer.Claims{Subject: "user-2", ClientID: "c1"},
			Owner{OrganizationID: "o1", ClientID: "c1", UserID: "user-2"}},
		{"product user", bearer.Claims{Subject: "user-3"},
			Owner{OrganizationID: "o1", UserID: "user-3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := OwnerOf(tenancy.Tenant{OrganizationID: "o1", Claims: &tc.claims}); got != tc.want {
				t.Fatalf("OwnerOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzKey feeds the Idempotency-Key reader any header value: it never
// panics, and a key it accepts is 1 to MaxKeyLen visible ASCII characters
// without quotes or backslashes.
func FuzzKey(f *testing.F) {
	for _, seed := range []string{"k1", `"k1"`, `""`, " ", "a b", `a"b`, `\`, "clé", strings.Repeat("k", MaxKeyLen+1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		r.Header["Idempotency-Key"] = []string{value}
		key, ok, err := Key(r)
		if err != nil {
			return
		}
		if !ok || key == "" || len(key) > MaxKeyLen {
			t.Fatalf("Key(%q) = %q, %v", value, key, ok)
		}
		for i := 0; i < len(key); i++ {
			if c := key[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				t.Fatalf("Key(%q) = %q holds %q", value, key, c)
			}
		}
	})
}
