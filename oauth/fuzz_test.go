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

// FuzzClientMetadata feeds the registration body parser and its checks any
// body: they never panic, a refusal is always a 400 of RFC 7591's codes (or
// invalid_request), and metadata they accept is what the server may store:
// a name, at most 20 redirect URIs that CheckRedirectURI accepts, a known
// authentication method, and scopes of the server.
func FuzzClientMetadata(f *testing.F) {
	f.Add([]byte(`{"client_name":"Agent","redirect_uris":["https://agent.example/cb"],"token_endpoint_auth_method":"none"}`))
	f.Add([]byte(`{"client_name":"A","redirect_uris":["javascript:alert(1)"]}`))
	f.Add([]byte(`{"client_name":"A","redirect_uris":["http://127.0.0.1:8080/cb"],"grant_types":["client_credentials"],"scope":"svc:orders:read x"}`))
	f.Add([]byte(`{"client_name":1,"redirect_uris":"https://a.example/cb"}`))
	f.Add([]byte(`[{"client_name":"A"}]`))
	f.Add([]byte(`{"client_name":"A","redirect_uris":["com.example.app:/cb"],"response_types":["code","token"],"logo_uri":"https://x"} {}`))
	f.Add([]byte(` `))
	s := &Server{ScopesSupported: []string{"svc:orders:read", "svc:orders:write"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := ParseClientMetadata(body)
		if err == nil {
			m, err = s.checkClientMetadata(m)
		}
		if err != nil {
			e := apierrors.FromRequest(httptest.NewRequest("POST", "/", nil), err)
			switch e.Code {
			case apierrors.CodeInvalidClientMetadata, apierrors.CodeInvalidRedirectURI:
			default:
				t.Fatalf("refusal %q (%v) is not an RFC 7591 error", e.Code, err)
			}
			if e.Status != 400 {
				t.Fatalf("refusal %v has status %d", err, e.Status)
			}
			return
		}
		if m.ClientName == "" || len(m.ClientName) > 200 {
			t.Fatalf("accepted the name %q", m.ClientName)
		}
		if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > maxClientRedirectURIs {
			t.Fatalf("accepted %d redirect URIs", len(m.RedirectURIs))
		}
		for _, u := range m.RedirectURIs {
			if CheckRedirectURI(u) != nil {
				t.Fatalf("accepted the redirect URI %q", u)
			}
		}
		switch m.TokenEndpointAuthMethod {
		case "none", "client_secret_basic", "client_secret_post":
		default:
			t.Fatalf("accepted the method %q", m.TokenEndpointAuthMethod)
		}
		for _, sc := range ParseScope(m.Scope) {
			if sc != "svc:orders:read" && sc != "svc:orders:write" {
				t.Fatalf("accepted the scope %q", sc)
			}
		}
	})
}
