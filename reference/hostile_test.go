package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile inputs through the reference server: the bounds of the events
// feed's types, of fields= and of the webhook URLs that package events,
// resource and webhook test on their own, here as a client meets them.

// requireShortError checks that a is a 400 in the error shape with code:
// exactly "error" and "error_description", and a body short enough that a
// huge parameter was not quoted back. It returns the description.
func requireShortError(t *testing.T, a swAnswer, code string) string {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, a.status, "%.300s", a.body)
	assert.Less(t, len(a.body), 1000, "%.300s", a.body)
	var body map[string]string
	require.NoError(t, json.Unmarshal([]byte(a.body), &body), "%.300s", a.body)
	assert.Len(t, body, 2, "error and error_description only: %.300s", a.body)
	assert.Equal(t, code, body["error"])
	assert.NotEmpty(t, body["error_description"])
	return body["error_description"]
}

// repeat returns n items of items, in turn, joined by commas.
func repeat(n int, items ...string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = items[i%len(items)]
	}
	return strings.Join(out, ",")
}

// TestFeedTypesBoundThroughTheServer: the types parameter of the events
// feed lists at most 50 event types, counted as given, whatever their
// number; more, or one long unknown type, is a short 400 invalid_request
// on both databases (70,000 types were a 500 on PostgreSQL, over its
// 65,535 parameters).
func TestFeedTypesBoundThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t))
			w.quotation(t, w.base)
			feed := w.base + "/v1/" + w.org + "/events?types="
			typesOf := func(t *testing.T, a swAnswer) []string {
				t.Helper()
				require.Equal(t, http.StatusOK, a.status, "%.300s", a.body)
				var page struct {
					Data []struct {
						Type string `json:"type"`
					} `json:"data"`
				}
				require.NoError(t, json.Unmarshal([]byte(a.body), &page))
				out := []string{}
				for _, ev := range page.Data {
					out = append(out, ev.Type)
				}
				return out
			}

			// 50 distinct types: every change of ten resources, and their
			// wildcards.
			var distinct []string
			for _, r := range []string{"vehicle", "account", "order", "project", "quotation", "shipment", "trip", "invoice", "tariff", "zone"} {
				for _, change := range []string{"created", "updated", "deleted", "status_changed", "*"} {
					distinct = append(distinct, r+"."+change)
				}
			}
			require.Len(t, distinct, 50)
			all := []string{"account.created", "quotation.created", "quotation.updated", "quotation.status_changed"}
			assert.Equal(t, all, typesOf(t, swDo(t, "GET", feed+strings.Join(distinct, ","), w.token, "", nil)), "50 distinct types")
			assert.Equal(t, []string{"account.created"}, typesOf(t, swDo(t, "GET", feed+repeat(50, "account.created"), w.token, "", nil)), "one type 50 times, kept once")

			for _, tc := range []struct{ name, types string }{
				{"51 types", strings.Join(distinct, ",") + ",*"},
				{"one type 51 times", repeat(51, "account.created")},
				// One type the token may read, so that the feed would query
				// the others: a URL under the server's 1 MB of headers.
				{"70,000 types", "account.created," + repeat(69_999, "zone.created", "zone.updated", "zone.deleted")},
			} {
				t.Run(tc.name, func(t *testing.T) {
					a := swDo(t, "GET", feed+tc.types, w.token, "", nil)
					assert.Contains(t, requireShortError(t, a, "invalid_request"), "at most 50 are allowed")
				})
			}
			t.Run("a 100 KB unknown type", func(t *testing.T) {
				a := swDo(t, "GET", feed+strings.Repeat("x", 100_000), w.token, "", nil)
				assert.Contains(t, requireShortError(t, a, "invalid_request"), "is not an event type")
			})
		})
	}
}
