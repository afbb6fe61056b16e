package webhook_test

import (
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook"
)

// clock is the fixed time of the deliveries tests.
var clock = time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)

func stamp(t time.Time) string { return t.UTC().Format(query.SQLiteTimestampLayout) }

// ids returns the ids of the deliveries of a list answer.
func ids(r response) []string {
	var out []string
	for _, d := range r.list() {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

func TestDeliveries(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(a *webhook.API) { a.Now = func() time.Time { return clock } }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		ep := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		other := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		path := endpoints(orgA) + "/" + ep + "/deliveries"
		eventIDs := []string{"", "01900000-0000-7000-8000-000000000001", "01900000-0000-7000-8000-000000000002",
			"01900000-0000-7000-8000-000000000003", "01900000-0000-7000-8000-000000000004", "01900000-0000-7000-8000-000000000005"}
		for seq := int64(1); seq <= 5; seq++ {
			e.addEvent(t, orgA, seq, eventIDs[seq], "quotation.updated")
		}
		base := clock.Add(-time.Hour)
		at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
		lease := at(100)
		// d1 delivered at once; d2 failed after three attempts; d3 pending
		// after one, leased; d4 pending, never tried; d5 delivered, made
		// at the same instant as d4.
		d1 := e.addDelivery(t, ep, orgA, 1, eventIDs[1], "delivered", 1, at(1), at(1), nil)
		e.addAttempt(t, d1, 1, at(1), 204, "", 12)
		d2 := e.addDelivery(t, ep, orgA, 2, eventIDs[2], "failed", 3, at(2), at(2), nil)
		e.addAttempt(t, d2, 1, at(2), 500, "HTTP 500", 30)
		e.addAttempt(t, d2, 2, at(3), 0, "timeout after 10s", 10000)
		e.addAttempt(t, d2, 3, at(4), 503, "HTTP 503", 25)
		d3 := e.addDelivery(t, ep, orgA, 3, eventIDs[3], "pending", 1, at(3), at(60), &lease)
		e.addAttempt(t, d3, 1, at(3), 500, "HTTP 500", 40)
		d4 := e.addDelivery(t, ep, orgA, 4, eventIDs[4], "pending", 0, at(4), at(4), nil)
		d5 := e.addDelivery(t, ep, orgA, 5, eventIDs[5], "delivered", 1, at(4), at(4), nil)
		e.addAttempt(t, d5, 1, at(5), 200, "", 8)
		e.addDelivery(t, other, orgA, 1, eventIDs[1], "delivered", 0, at(9), at(9), nil)
		// Retention removed the event of d2.
		_, err := e.db.Exec("DELETE FROM waybill_events WHERE organization_id = $1 AND seq = 2", orgA)
		require.NoError(t, err)

		r := e.do(t, http.MethodGet, path, tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, []string{d5, d4, d3, d2, d1}, ids(r), "newest first, the id breaking ties")
		assert.Equal(t, map[string]any{"limit": 50.0, "next_cursor": nil}, r.body["pagination"])
		assert.Equal(t, "v1", r.body["version"])
		byID := map[string]map[string]any{}
		for _, d := range r.list() {
			byID[d.(map[string]any)["id"].(string)] = d.(map[string]any)
		}
		assert.Equal(t, map[string]any{
			"id": d3, "event_id": eventIDs[3], "event_type": "quotation.updated", "status": "pending",
			"attempts":        []any{map[string]any{"at": stamp(at(3)), "status_code": 500.0, "error": "HTTP 500", "duration_ms": 40.0}},
			"next_attempt_at": stamp(at(60)), "created_at": stamp(at(3)),
		}, byID[d3])
		assert.Equal(t, map[string]any{
			"id": d2, "event_id": eventIDs[2], "event_type": nil, "status": "failed",
			"attempts": []any{
				map[string]any{"at": stamp(at(2)), "status_code": 500.0, "error": "HTTP 500", "duration_ms": 30.0},
				map[string]any{"at": stamp(at(3)), "status_code": nil, "error": "timeout after 10s", "duration_ms": 10000.0},
				map[string]any{"at": stamp(at(4)), "status_code": 503.0, "error": "HTTP 503", "duration_ms": 25.0},
			},
			"next_attempt_at": nil, "created_at": stamp(at(2)),
		}, byID[d2])
		assert.Equal(t, []any{map[string]any{"at": stamp(at(1)), "status_code": 204.0, "error": nil, "duration_ms": 12.0}}, byID[d1]["attempts"])
		assert.Equal(t, []any{}, byID[d4]["attempts"])
		assert.Nil(t, byID[d1]["next_attempt_at"])

		// Pages of two, following next_cursor and Link.
		var pages [][]string
		next := path + "?limit=2"
		for next != "" {
			r := e.do(t, http.MethodGet, next, tok, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			pages = append(pages, ids(r))
			p := r.body["pagination"].(map[string]any)
			assert.Equal(t, 2.0, p["limit"])
			if p["next_cursor"] == nil {
				assert.Empty(t, r.header.Get("Link"))
				next = ""
				continue
			}
			link := r.header.Get("Link")
			require.True(t, strings.HasPrefix(link, "<") && strings.HasSuffix(link, `>; rel="next"`), link)
			next = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			u, err := url.Parse(next)
			require.NoError(t, err)
			assert.Equal(t, p["next_cursor"], u.Query().Get("after"))
		}
		assert.Equal(t, [][]string{{d5, d4}, {d3, d2}, {d1}}, pages)

		r = e.do(t, http.MethodGet, path+"?status=pending", tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, []string{d4, d3}, ids(r))
		r = e.do(t, http.MethodGet, path+"?status=delivered&limit=1", tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, []string{d5}, ids(r))
		cursor := r.body["pagination"].(map[string]any)["next_cursor"].(string)
		r = e.do(t, http.MethodGet, path+"?status=delivered&limit=1&after="+cursor, tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, []string{d1}, ids(r))
		for _, q := range []string{"status=failed&after=" + cursor, "after=" + cursor, "after=xyz", "after=" + cursor + "AA",
			"limit=0", "limit=101", "status=sent", "types=*"} {
			r := e.do(t, http.MethodGet, path+"?"+q, tok, "")
			assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", q, r.raw)
			assert.Equal(t, "invalid_request", r.code(), q)
		}

		// Redelivery: pending, due now, a new round; the history stays.
		redeliver := func(d string) response {
			return e.do(t, http.MethodPost, path+"/"+d+"/redeliver", tok, "")
		}
		for _, d := range []string{d3, d1} {
			r = redeliver(d)
			require.Equal(t, http.StatusAccepted, r.status, r.raw)
			got := r.data()
			assert.Equal(t, d, got["id"])
			assert.Equal(t, "pending", got["status"])
			assert.Equal(t, stamp(clock), got["next_attempt_at"])
			assert.Len(t, got["attempts"], 1)
			var (
				status   string
				attempts int
				leased   sql.NullString
			)
			require.NoError(t, e.db.QueryRow("SELECT status, attempts, CAST(lease_until AS text) FROM waybill_webhook_deliveries WHERE id = $1", d).
				Scan(&status, &attempts, &leased))
			assert.Equal(t, "pending", status)
			assert.Equal(t, 0, attempts)
			assert.False(t, leased.Valid)
		}
		r = redeliver(d2)
		assert.Equal(t, http.StatusConflict, r.status, r.raw)
		assert.Equal(t, "conflict", r.code())
		assert.Contains(t, r.body["error_description"], "retention")

		// Deliveries of another endpoint, unknown ids and non-UUIDs are 404.
		for _, p := range []string{
			path + "/" + d4 + "x/redeliver",
			endpoints(orgA) + "/" + other + "/deliveries/" + d4 + "/redeliver",
			path + "/01900000-0000-7000-8000-0000000000ff/redeliver",
			endpoints(orgA) + "/01900000-0000-7000-8000-0000000000ff/deliveries/" + d4 + "/redeliver",
		} {
			r := e.do(t, http.MethodPost, p, tok, "")
			assert.Equal(t, http.StatusNotFound, r.status, "%s: %s", p, r.raw)
			assert.Equal(t, "not_found", r.code())
		}
		r = e.do(t, http.MethodGet, endpoints(orgA)+"/01900000-0000-7000-8000-0000000000ff/deliveries", tok, "")
		assert.Equal(t, http.StatusNotFound, r.status, r.raw)
		r = e.do(t, http.MethodGet, endpoints(orgA)+"/"+other+"/deliveries", tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Len(t, r.list(), 1)

		// Deleting the endpoint removes its deliveries and their attempts.
		require.Equal(t, http.StatusOK, e.do(t, http.MethodDelete, endpoints(orgA)+"/"+ep, tok, "").status)
		var n int
		require.NoError(t, e.db.QueryRow("SELECT count(*) FROM waybill_webhook_deliveries WHERE endpoint_id = $1", ep).Scan(&n))
		assert.Zero(t, n)
		require.NoError(t, e.db.QueryRow("SELECT count(*) FROM waybill_webhook_attempts").Scan(&n))
		assert.Zero(t, n)
	})
}

// An endpoint without deliveries, or a page past the last, lists none:
// data is an empty array, not null.
func TestNoDeliveries(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		ep := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		for _, q := range []string{"", "?status=failed"} {
			r := e.do(t, http.MethodGet, endpoints(orgA)+"/"+ep+"/deliveries"+q, tok, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, []any{}, r.body["data"], q)
		}
	})
}
