package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// KeyBySignInEmail keys a sign-in by the email it names, read as the
// endpoints read parameters, and puts the body back for the endpoint.
func TestKeyBySignInEmail(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxRequestBytes)
	sum := sha256.Sum256([]byte("a@x.test"))
	key := "email:" + hex.EncodeToString(sum[:])
	tests := []struct {
		name, ct, body string
		want           string // the key; "" for none
	}{
		{name: "form", ct: "application/x-www-form-urlencoded", body: "email=a%40x.test&password=p", want: key},
		{name: "form with charset", ct: "application/x-www-form-urlencoded; charset=utf-8", body: "email=a%40x.test", want: key},
		{name: "json", ct: "application/json", body: `{"email":"a@x.test","password":"p"}`, want: key},
		{name: "case and space", ct: "application/json", body: `{"email":"  A@X.Test "}`, want: key},
		{name: "json, key differs in case", ct: "application/json", body: `{"Email":"a@x.test"}`},
		{name: "json, not a string", ct: "application/json", body: `{"email":1,"password":"p"}`},
		{name: "json, not an object", ct: "application/json", body: `["email"]`},
		{name: "no email", ct: "application/x-www-form-urlencoded", body: "password=p"},
		{name: "blank email", ct: "application/x-www-form-urlencoded", body: "email=+&password=p"},
		{name: "email twice", ct: "application/x-www-form-urlencoded", body: "email=a%40x.test&email=b%40x.test"},
		{name: "other type", ct: "text/plain", body: "email=a%40x.test"},
		{name: "no type", body: "email=a%40x.test"},
		{name: "too long", ct: "application/x-www-form-urlencoded", body: "email=a%40x.test&pad=" + long},
		{name: "bad form", ct: "application/x-www-form-urlencoded", body: "email=%zz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, PathUserToken, strings.NewReader(tt.body))
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			got, ok := KeyBySignInEmail(req)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want != "", ok)
			rest, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(rest), "the endpoint reads the whole body")
			require.NoError(t, req.Body.Close())
		})
	}
}
