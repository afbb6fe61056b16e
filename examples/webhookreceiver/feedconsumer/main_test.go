package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFeed serves a feed of three quotation events (cursors "1" to "3";
// "old" is expired) and a list of quotations in two pages. It answers 429
// to the first feed request when busy, and cancels when it serves an
// empty page, the consumer having caught up.
type fakeFeed struct {
	busy   bool
	cancel context.CancelFunc

	mu       sync.Mutex
	requests []string
}

func (f *fakeFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.Path+" "+r.URL.Query().Get("after"))
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/scope/quotations":
		if r.URL.Query().Get("after") == "" {
			_, _ = w.Write([]byte(`{"data":[{"id":"q1"}],"pagination":{"next_cursor":"p2"},"version":"v1"}`))
		} else {
			_, _ = w.Write([]byte(`{"data":[{"id":"q2"}],"pagination":{"next_cursor":null},"version":"v1"}`))
		}
	case "/v1/scope/events":
		if f.busy {
			f.busy = false
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		if r.URL.Query().Get("types") != "quotation.*" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		after := r.URL.Query().Get("after")
		if after == "old" {
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"error":"cursor_expired","error_description":"the cursor is older than the events kept"}`))
			return
		}
		n, _ := strconv.Atoi(after) // "" = 0, the start
		var data []map[string]any
		next := after
		for i := n + 1; i <= 3; i++ {
			data = append(data, map[string]any{"id": "e" + strconv.Itoa(i), "type": "quotation.updated", "subject": "q1",
				"data": map[string]any{"record": map[string]any{"id": "q1"}, "changed": []string{"status"}}})
			next = strconv.Itoa(i)
		}
		if len(data) == 0 {
			f.cancel()
			data = []map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "next_cursor": next, "version": "v1"})
	default: // as Waybill answers a scope that is no branch of the token's organization
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"not_found","error_description":"not found"}`))
	}
}

func TestConsumer(t *testing.T) {
	absent := "\x00absent"
	tests := []struct {
		name     string
		cursor   string // the stored cursor at start
		busy     bool
		requests []string
	}{
		{"first start: snapshot, then the feed from its start", absent, false, []string{
			"/v1/scope/quotations ", "/v1/scope/quotations p2",
			"/v1/scope/events ", "/v1/scope/events 3"}},
		{"resume from the stored cursor", "2", false, []string{
			"/v1/scope/events 2", "/v1/scope/events 3"}},
		{"caught up", "3", false, []string{
			"/v1/scope/events 3"}},
		{"expired cursor: snapshot again", "old", false, []string{
			"/v1/scope/events old",
			"/v1/scope/quotations ", "/v1/scope/quotations p2",
			"/v1/scope/events ", "/v1/scope/events 3"}},
		{"429 with Retry-After: try again", "3", true, []string{
			"/v1/scope/events 3", "/v1/scope/events 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f := &fakeFeed{busy: tt.busy, cancel: cancel}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			file := filepath.Join(t.TempDir(), "feed.cursor")
			if tt.cursor != absent {
				require.NoError(t, os.WriteFile(file, []byte(tt.cursor), 0o600))
			}
			c := &consumer{base: srv.URL, token: "tok", scope: "scope", cursorFile: file, client: srv.Client(), poll: time.Millisecond}

			err := c.run(ctx)
			require.ErrorIs(t, err, context.Canceled, "runs until the context ends")
			f.mu.Lock()
			defer f.mu.Unlock()
			assert.Equal(t, tt.requests, f.requests)
			stored, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, "3", string(stored), "the cursor after the last event is stored")
		})
	}
}

func TestConsumerStopsOnUnauthorized(t *testing.T) {
	srv := httptest.NewServer(&fakeFeed{cancel: func() {}})
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "feed.cursor")
	require.NoError(t, os.WriteFile(file, []byte("1"), 0o600))
	c := &consumer{base: srv.URL, token: "wrong", scope: "scope", cursorFile: file, client: srv.Client(), poll: time.Millisecond}
	err := c.run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), "wrong", "the token is not in the error")
}

// TestConsumerExplainsAnOrganizationScope: quotations belong to branches, so
// a scope that is the organization's id (a 404 on the quotations) stops the
// program with an error that says what to set instead.
func TestConsumerExplainsAnOrganizationScope(t *testing.T) {
	srv := httptest.NewServer(&fakeFeed{cancel: func() {}})
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "feed.cursor")
	c := &consumer{base: srv.URL, token: "tok", scope: "organization", cursorFile: file, client: srv.Client(), poll: time.Millisecond}
	err := c.run(context.Background())
	require.ErrorIs(t, err, errNotFound)
	assert.Contains(t, err.Error(), "set WAYBILL_SCOPE_ID to the id of a branch")
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 500 * time.Millisecond, time.Second},
		{1, time.Second, 2 * time.Second},
		{3, 4 * time.Second, 8 * time.Second},
		{6, 30 * time.Second, time.Minute},
		{50, 30 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.attempt), func(t *testing.T) {
			for range 100 {
				d := backoff(tt.attempt)
				assert.GreaterOrEqual(t, d, tt.min)
				assert.Less(t, d, tt.max)
			}
		})
	}
}
