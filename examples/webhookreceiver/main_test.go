package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook/signature"
)

const (
	eventID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	otherID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"
)

// eventBody is a delivery's body as the server sends it.
func eventBody(id string) []byte {
	return []byte(`{"specversion":"1.0","id":"` + id + `","source":"/v1/0193a000-0000-7000-8000-000000000001/quotations/0193a000-0000-7000-8000-0000000000aa",` +
		`"type":"quotation.status_changed","subject":"0193a000-0000-7000-8000-0000000000aa","time":"2026-11-24T01:02:03.456789Z",` +
		`"datacontenttype":"application/json","organizationid":"0193a000-0000-7000-8000-000000000001","branchid":"0193a000-0000-7000-8000-000000000002",` +
		`"clientid":"app","userid":"0193a000-0000-7000-8000-000000000003",` +
		`"data":{"record":{"id":"0193a000-0000-7000-8000-0000000000aa","status":"sent"},"changed":["status"],"status":{"field":"status","from":"draft","to":"sent"}}}`)
}

// delivery is one POST of the test sender.
type delivery struct {
	id         string // webhook-id and event id
	signWith   string // the secret it is signed with; "" = the receiver's
	handleErr  error  // what the handler returns this time
	wantStatus int
	wantCalls  int // the handler's calls so far, after this delivery
}

func TestReceiver(t *testing.T) {
	secret := signature.NewSecret()
	tests := []struct {
		name       string
		deliveries []delivery
	}{
		{"signed delivery is handled", []delivery{
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 1},
		}},
		{"a retry of a handled delivery is acknowledged, not handled again", []delivery{
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 1},
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 1},
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 1},
			{id: otherID, wantStatus: http.StatusNoContent, wantCalls: 2},
		}},
		{"bad signature is refused and not handled", []delivery{
			{id: eventID, signWith: signature.NewSecret(), wantStatus: http.StatusUnauthorized, wantCalls: 0},
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 1},
		}},
		{"handler error answers 500, and the retry is handled once", []delivery{
			{id: eventID, handleErr: errors.New("database down"), wantStatus: http.StatusInternalServerError, wantCalls: 1},
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 2},
			{id: eventID, wantStatus: http.StatusNoContent, wantCalls: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				calls     int
				handleErr error
				got       []event
			)
			h := newReceiver(secret, func(_ context.Context, e event) error {
				calls++
				if handleErr != nil {
					return handleErr
				}
				got = append(got, e)
				return nil
			})
			for i, d := range tt.deliveries {
				handleErr = d.handleErr
				key := secret
				if d.signWith != "" {
					key = d.signWith
				}
				w := post(t, h, key, d.id, eventBody(d.id))
				assert.Equal(t, d.wantStatus, w.Code, "delivery %d: %s", i, w.Body)
				assert.Equal(t, d.wantCalls, calls, "delivery %d", i)
			}
			for _, e := range got {
				assert.Equal(t, "quotation.status_changed", e.Type)
				assert.Equal(t, "0193a000-0000-7000-8000-0000000000aa", e.Subject)
				assert.Equal(t, []string{"status"}, e.Data.Changed)
				require.NotNil(t, e.Data.Status)
				assert.Equal(t, "sent", e.Data.Status.To)
				assert.JSONEq(t, `{"id":"0193a000-0000-7000-8000-0000000000aa","status":"sent"}`, string(e.Data.Record))
			}
		})
	}
}

// post delivers body signed with secret to h.
func post(t *testing.T, h http.Handler, secret, id string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, signedRequest(t, secret, id, body))
	return w
}

// signedRequest returns a delivery of body signed with secret.
func signedRequest(t *testing.T, secret, id string, body []byte) *http.Request {
	t.Helper()
	hdr, err := signature.Sign(secret, id, time.Now(), body)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	for k, v := range hdr {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/cloudevents+json")
	return r
}

func TestReceiverRefuses(t *testing.T) {
	secret := signature.NewSecret()
	signed := func(body []byte) http.Header {
		h, err := signature.Sign(secret, eventID, time.Now(), body)
		require.NoError(t, err)
		return h
	}
	tests := []struct {
		name   string
		method string
		path   string
		header http.Header
		body   []byte
		want   int
	}{
		{"GET", http.MethodGet, "/", signed(nil), nil, http.StatusMethodNotAllowed},
		{"other path", http.MethodPost, "/other", signed(eventBody(eventID)), eventBody(eventID), http.StatusNotFound},
		{"no signature", http.MethodPost, "/", http.Header{}, eventBody(eventID), http.StatusUnauthorized},
		{"old delivery replayed", http.MethodPost, "/", func() http.Header {
			h, err := signature.Sign(secret, eventID, time.Now().Add(-time.Hour), eventBody(eventID))
			require.NoError(t, err)
			return h
		}(), eventBody(eventID), http.StatusUnauthorized},
		{"body changed", http.MethodPost, "/", signed(eventBody(eventID)), eventBody(otherID), http.StatusUnauthorized},
		{"too large", http.MethodPost, "/", signed(nil), bytes.Repeat([]byte("x"), maxBody+1), http.StatusRequestEntityTooLarge},
		{"signed, but not JSON", http.MethodPost, "/", signed([]byte("not json")), []byte("not json"), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			h := newReceiver(secret, func(context.Context, event) error { calls++; return nil })
			r := httptest.NewRequest(tt.method, tt.path, bytes.NewReader(tt.body))
			r.Header = tt.header
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tt.want, w.Code)
			assert.Zero(t, calls)
			assert.NotContains(t, w.Body.String(), secret)
		})
	}
}

// A delivery that arrives again while the first is still being handled
// (the sender timed out and retried) gets 409, and is not handled twice.
func TestReceiverConcurrentDuplicate(t *testing.T) {
	secret := signature.NewSecret()
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	calls := 0
	h := newReceiver(secret, func(context.Context, event) error {
		mu.Lock()
		calls++
		mu.Unlock()
		close(started)
		<-release
		return nil
	})
	first := make(chan int)
	r := signedRequest(t, secret, eventID, eventBody(eventID))
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		first <- w.Code
	}()
	<-started
	assert.Equal(t, http.StatusConflict, post(t, h, secret, eventID, eventBody(eventID)).Code)
	close(release)
	assert.Equal(t, http.StatusNoContent, <-first)
	assert.Equal(t, http.StatusNoContent, post(t, h, secret, eventID, eventBody(eventID)).Code)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, calls)
}

func TestSeenSetBounds(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	s := newSeenSet(3, time.Hour)
	s.now = func() time.Time { return now }
	handle := func(id string) {
		require.Equal(t, unseen, s.begin(id))
		s.end(id, true)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		handle(id)
		now = now.Add(time.Minute)
	}
	tests := []struct {
		name  string
		id    string
		after time.Duration // clock moved on before the check
		want  int
	}{
		{"evicted when full", "a", 0, unseen},
		{"kept", "b", 0, handled},
		{"newest kept", "d", 0, handled},
		{"expired after ttl", "c", time.Hour, unseen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = now.Add(tt.after)
			got := s.begin(tt.id)
			assert.Equal(t, tt.want, got)
			if got == unseen {
				s.end(tt.id, false)
			}
		})
	}
	require.Equal(t, unseen, s.begin("x"))
	s.end("x", false)
	assert.Equal(t, unseen, s.begin("x"), "a failed id is not remembered")
}

func TestRunRefusesBadSecret(t *testing.T) {
	for _, secret := range []string{"", "plain", "whsec_%%%"} {
		err := run("127.0.0.1:0", secret)
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "WEBHOOK_SECRET"))
		assert.NotContains(t, err.Error(), "%%%", "the secret is not echoed")
	}
}
