package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
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

// TestFieldSelectionBoundThroughTheServer: fields= on a list and on a
// record names at most as many fields as the resource has, on both
// databases: 50,000 names are a short 400 without a Link header, and a
// field given twice is selected once, the next page's Link carrying the
// fields selected rather than the parameter as sent.
func TestFieldSelectionBoundThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t))
			w.quotation(t, w.base)
			w.quotation(t, w.base)
			list := w.base + "/v1/" + w.branch + "/quotations"
			full := swDo(t, "GET", list+"?limit=1", w.token, "", nil)
			require.Equal(t, http.StatusOK, full.status, full.body)
			first := full.json(t)["data"].([]any)[0].(map[string]any)
			record := list + "/" + first["id"].(string)
			var every []string
			for name := range first {
				every = append(every, name)
			}
			require.Greater(t, len(every), 10, "the fields of quotations: %v", every)
			fieldsOf := func(t *testing.T, a swAnswer) map[string]any {
				t.Helper()
				require.Equal(t, http.StatusOK, a.status, "%.300s", a.body)
				switch data := a.json(t)["data"].(type) {
				case []any:
					require.Len(t, data, 1)
					return data[0].(map[string]any)
				case map[string]any:
					return data
				}
				t.Fatalf("no record in %.300s", a.body)
				return nil
			}

			for _, path := range []string{list + "?limit=1&", record + "?"} {
				a := swDo(t, "GET", path+"fields="+strings.Join(every, ","), w.token, "", nil)
				assert.Len(t, fieldsOf(t, a), len(every), "every field once, %s", path)
				a = swDo(t, "GET", path+"fields="+url.QueryEscape(" status , quotation_number,status"), w.token, "", nil)
				assert.Equal(t, []string{"id", "quotation_number", "status"}, keys(fieldsOf(t, a)), "a duplicate selected once, %s", path)
			}

			t.Run("the next page's Link carries the fields selected", func(t *testing.T) {
				a := swDo(t, "GET", list+"?limit=1&fields="+url.QueryEscape(" status , quotation_number,status"), w.token, "", nil)
				require.Equal(t, http.StatusOK, a.status, a.body)
				link := a.header.Get("Link")
				require.True(t, strings.HasPrefix(link, "<") && strings.HasSuffix(link, `>; rel="next"`), link)
				next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
				require.NoError(t, err)
				assert.Equal(t, []string{"id,quotation_number,status"}, next.Query()["fields"], "in the resource's order, each once")
				followed := swDo(t, "GET", w.base+next.String(), w.token, "", nil)
				second := fieldsOf(t, followed)
				assert.Equal(t, []string{"id", "quotation_number", "status"}, keys(second))
				assert.NotEqual(t, first["id"], second["id"], "the next page")
			})

			for _, tc := range []struct{ name, fields string }{
				{"one name more than there are fields", strings.Join(every, ",") + ",id"},
				{"50,000 names", repeat(50_000, "status")},
				{"50,000 unknown names", repeat(50_000, "x")},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for _, path := range []string{list + "?limit=1&", record + "?"} {
						a := swDo(t, "GET", path+"fields="+tc.fields, w.token, "", nil)
						assert.Contains(t, requireShortError(t, a, "invalid_request"), "at most as many", path)
						assert.Empty(t, a.header.Get("Link"), path)
					}
				})
			}
		})
	}
}

// keys returns the names of m's members, sorted.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestWebhookGuardThroughTheServer: without --webhook-allow-private, on
// both databases, the API refuses webhook URLs at addresses that are not
// globally reachable (6to4, Teredo, benchmarking, IETF protocol
// assignments, documentation, discard-only, reserved, unique local, NAT64
// of a private address) with a 400 and stores nothing, at creation as at
// an update; and it refuses a name that resolves to a loopback address
// without telling which.
func TestWebhookGuardThroughTheServer(t *testing.T) {
	t.Parallel()
	refused := []string{
		"http://[2002:a00:1::1]/",                        // 6to4 of 10.0.0.1
		"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", // Teredo
		"http://198.18.0.1/",                             // benchmarking
		"http://192.0.0.8/",                              // IETF protocol assignments
		"http://192.0.2.1/",                              // TEST-NET-1
		"http://[100::1]/",                               // discard-only
		"http://240.0.0.1/",                              // reserved
		"http://[fc00::1]/",                              // unique local
		"http://[64:ff9b::a00:1]/",                       // NAT64 of 10.0.0.1
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhookWorld(t, b.url(t))
			endpoints := w.base + "/v1/" + w.org + "/webhook_endpoints"
			stored := func(t *testing.T) []any {
				t.Helper()
				a := swDo(t, "GET", endpoints, w.token, "", nil)
				require.Equal(t, http.StatusOK, a.status, a.body)
				return a.json(t)["data"].([]any)
			}

			for _, u := range refused {
				t.Run("POST "+u, func(t *testing.T) {
					a := swDo(t, "POST", endpoints, w.token, `{"url": "`+u+`", "event_types": ["*"]}`, nil)
					assert.Contains(t, requireShortError(t, a, "invalid_create"), "url: ")
				})
			}
			// Names of the loopback address. The resolver of the C library
			// (which Go uses where nsswitch.conf asks for more than files
			// and DNS) finds no "localhost." in /etc/hosts: that one is
			// refused, for one reason or the other.
			for _, tc := range []struct {
				url      string
				resolves bool
			}{
				{"http://localhost:9/", true},
				{"http://LocalHost/hook", true},
				{"http://localhost./hook", false},
			} {
				t.Run("POST "+tc.url, func(t *testing.T) {
					a := swDo(t, "POST", endpoints, w.token, `{"url": "`+tc.url+`", "event_types": ["*"]}`, nil)
					description := requireShortError(t, a, "invalid_create")
					if tc.resolves {
						assert.Contains(t, description, "resolves to a loopback address")
					}
					for _, address := range []string{"127.0.0.1", "::1"} {
						assert.NotContains(t, a.body, address, "the addresses a name resolves to are the server's business")
					}
				})
			}
			assert.Empty(t, stored(t), "nothing stored")

			// An endpoint at a public address (nothing is written, so
			// nothing is delivered) cannot be moved to a refused one.
			created := swDo(t, "POST", endpoints, w.token, `{"url": "http://93.184.215.14/hook", "event_types": ["*"]}`, nil)
			require.Equal(t, http.StatusCreated, created.status, created.body)
			item := endpoints + "/" + created.json(t)["data"].(map[string]any)["id"].(string)
			for _, u := range append(refused, "http://localhost:9/") {
				t.Run("PATCH "+u, func(t *testing.T) {
					a := swDo(t, "PATCH", item, w.token, `{"url": "`+u+`"}`, nil)
					assert.NotContains(t, requireShortError(t, a, "invalid_update"), "127.0.0.1")
				})
			}
			list := stored(t)
			require.Len(t, list, 1)
			assert.Equal(t, "http://93.184.215.14/hook", list[0].(map[string]any)["url"], "the URL unchanged")
		})
	}
}
