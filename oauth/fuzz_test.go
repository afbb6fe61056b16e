package oauth

import (
	"bytes"
	"net/http/httptest"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
)

// FuzzTokenRequest feeds the token request parser any body, content type
// and Authorization header: it never panics, and a refusal is always a 4xx
// error of the API's error model.
func FuzzTokenRequest(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("grant_type=client_credentials&client_id=a&client_secret=b"), "")
	f.Add("application/json", []byte(`{"grant_type":"authorization_code","code":"c","scope":["a","b"]}`), "")
	f.Add("application/x-www-form-urlencoded; charset=utf-8", []byte("grant_type=refresh_token&refresh_token=x"), "Basic YSUzQWI6YyUyNmQ=")
	f.Add("application/json", []byte(`{"client_id":null,"x":1}`), "Basic !!!")
	f.Add("text/plain", []byte("%zz"), "Bearer x")
	f.Add("application/x-www-form-urlencoded", []byte("a=1&a=2;b"), "Basic Og==")
	f.Fuzz(func(t *testing.T, ct string, body []byte, auth string) {
		r := httptest.NewRequest("POST", "/auth/v1/oauth/token", bytes.NewReader(body))
		r.Header.Set("Content-Type", ct)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		form, err := readParams(r)
		if err == nil {
			_, err = readClient(r, form)
		}
		if err != nil {
			e, ok := apierrors.As(err)
			if !ok || e.Status < 400 || e.Status > 499 {
				t.Fatalf("refusal is not a 4xx API error: %#v", err)
			}
		}
	})
}
