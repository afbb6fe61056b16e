package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waybillhq/waybill/oauth"
)

// failingAppStore fails every lookup of an app.
type failingAppStore struct{ oauth.Store }

func (failingAppStore) App(context.Context, string) (*oauth.App, error) {
	return nil, errors.New("store down")
}

// TestErrorWriterTakenPerRequest checks that the endpoints answer their
// errors with the server's Logger and realm as they are when the request is
// served: a host may set Issuer (which gives the realm) and Logger after
// Handler, as when the issuer is the URL of the test server the handler
// runs on.
func TestErrorWriterTakenPerRequest(t *testing.T) {
	srv := &oauth.Server{Store: failingAppStore{}}
	h := srv.Handler()
	var logs bytes.Buffer
	srv.Issuer = "https://late.example"
	srv.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	post := func(body string, basic bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic {
			req.Header.Set("Authorization", "Basic !!!")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	rec := post("grant_type=client_credentials", true)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("malformed Basic credentials: status %d, want 401", rec.Code)
	}
	if got, want := rec.Header().Get("WWW-Authenticate"), `Basic realm="late.example"`; got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}

	rec = post("grant_type=client_credentials&client_id=app&client_secret=s", false)
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("store failure: status %d, want 500", rec.Code)
	}
	if !strings.Contains(logs.String(), "request failed") || !strings.Contains(logs.String(), "store down") {
		t.Errorf("the failure is not in the Logger set after Handler; logs: %q", logs.String())
	}
}
