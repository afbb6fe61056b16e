package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
)

// TestEvents checks the events of each kind of write: their CloudEvents
// attributes, extensions and data, read through the feed and validated by
// the CloudEvents SDK.
func TestEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		user := e.codeToken(t, orgA, "user-7", allScopes...)
		q := e.must(t, "POST", "/v1/"+a1+"/quotations", user, `{"name": "first"}`)
		require.Equal(t, http.StatusCreated, q.status, q.raw)
		id := q.data()["id"].(string)
		up := e.must(t, "PATCH", "/v1/"+a1+"/quotations/"+id, user, `{"status": "sent", "name": "second"}`)
		require.Equal(t, http.StatusOK, up.status, up.raw)
		same := e.must(t, "PATCH", "/v1/"+a1+"/quotations/"+id, user, `{}`)
		require.Equal(t, http.StatusOK, same.status, "a PATCH that sets nothing writes nothing, and has no event")
		app := e.ccToken(t, orgA, []string{a1, a2}, allScopes...)
		v := e.must(t, "POST", "/v1/"+orgA+"/vehicles", app, `{"name": "truck"}`)
		require.Equal(t, http.StatusCreated, v.status, v.raw)
		del := e.must(t, "DELETE", "/v1/"+a1+"/quotations/"+id, user, "")
		require.Equal(t, http.StatusOK, del.status, del.raw)

		evs, _ := e.follow(t, orgA, user, "", "")
		require.Len(t, evs, 5)
		types := make([]string, len(evs))
		for i, ev := range evs {
			types[i] = ev["type"].(string)
			raw, err := json.Marshal(ev)
			require.NoError(t, err)
			var ce cloudevents.Event
			require.NoError(t, json.Unmarshal(raw, &ce), "a CloudEvent: %s", raw)
			require.NoError(t, ce.Validate())
			assert.Equal(t, "1.0", ce.SpecVersion())
			assert.Equal(t, "application/json", ce.DataContentType())
			assert.Equal(t, orgA, ce.Extensions()["organizationid"])
			assert.NotEmpty(t, ev["clientid"], "the acting client, for tokens of both grants")
			_, err = time.Parse(time.RFC3339Nano, ev["time"].(string))
			require.NoError(t, err)
		}
		assert.Equal(t, []string{"quotation.created", "quotation.updated", "quotation.status_changed", "vehicle.created", "quotation.deleted"}, types)

		created := evs[0]
		assert.Equal(t, "/v1/"+a1+"/quotations/"+id, created["source"])
		assert.Equal(t, id, created["subject"])
		assert.Equal(t, a1, created["branchid"])
		assert.Equal(t, "user-7", created["userid"])
		data := created["data"].(map[string]any)
		assert.Equal(t, q.data(), data["record"], "the record as the API answered it")
		assert.Equal(t, []any{"name", "status"}, data["changed"], "what the record was given, by the client and its hooks")

		updated := evs[1]["data"].(map[string]any)
		assert.Equal(t, up.data(), updated["record"])
		assert.Equal(t, []any{"name", "status"}, updated["changed"])
		assert.NotContains(t, updated, "status")
		moved := evs[2]["data"].(map[string]any)
		assert.Equal(t, map[string]any{"field": "status", "from": "draft", "to": "sent"}, moved["status"])
		assert.Equal(t, up.data(), moved["record"])
		assert.NotEqual(t, evs[1]["id"], evs[2]["id"])

		vehicle := evs[3]
		assert.NotContains(t, vehicle, "branchid", "an organization-wide record has no branch")
		assert.NotContains(t, vehicle, "userid", "a client-credentials token acts for no user")
		assert.Equal(t, "client-2", vehicle["clientid"])
		assert.Equal(t, "/v1/"+orgA+"/vehicles/"+v.data()["id"].(string), vehicle["source"])

		deleted := evs[4]["data"].(map[string]any)
		assert.Equal(t, map[string]any{"id": id}, deleted["record"], "a delete carries the id alone")
		assert.Equal(t, []any{}, deleted["changed"])
	})
}

// TestEventTimeIsTheRecordsUpdatedAt checks that an event's time is the
// updated_at of the record it carries, as the API answered it, on a clock
// with nanoseconds; a delete's is the time of the delete to the microsecond.
func TestEventTimeIsTheRecordsUpdatedAt(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		var (
			mu  sync.Mutex
			now = time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
		)
		e.registry.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Second)
			return now
		}
		tok := e.codeToken(t, orgA, "u", allScopes...)
		q := e.must(t, "POST", "/v1/"+a1+"/quotations", tok, `{"name": "first"}`)
		require.Equal(t, http.StatusCreated, q.status, q.raw)
		id := q.data()["id"].(string)
		up := e.must(t, "PATCH", "/v1/"+a1+"/quotations/"+id, tok, `{"status": "sent"}`)
		require.Equal(t, http.StatusOK, up.status, up.raw)
		del := e.must(t, "DELETE", "/v1/"+a1+"/quotations/"+id, tok, "")
		require.Equal(t, http.StatusOK, del.status, del.raw)
		mu.Lock()
		deletedAt := now
		mu.Unlock()

		evs, _ := e.follow(t, orgA, tok, "", "")
		require.Len(t, evs, 4)
		assert.Equal(t, q.data()["updated_at"], evs[0]["time"], "created")
		assert.Equal(t, up.data()["updated_at"], evs[1]["time"], "updated")
		assert.Equal(t, up.data()["updated_at"], evs[2]["time"], "status_changed")
		for _, ev := range evs {
			assert.True(t, strings.HasSuffix(ev["time"].(string), ".123456Z"), "to the microsecond, not rounded: %s", ev["time"])
		}
		assert.Equal(t, deletedAt.Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z"), evs[3]["time"], "deleted")
		var stored any
		require.NoError(t, e.db.QueryRow("SELECT time FROM waybill_events WHERE organization_id = $1 AND seq = 1", orgA).Scan(&stored))
		at, err := query.ScanTimestamp(stored)
		require.NoError(t, err)
		assert.Equal(t, q.data()["updated_at"], at.Format("2006-01-02T15:04:05.000000Z"), "the time column too")
	})
}

// TestRolledBackWritesLeaveNoEvent checks that a write refused before the
// outbox, and one rolled back after the outbox appended its event, leave
// neither an event nor a hole in the sequence.
func TestRolledBackWritesLeaveNoEvent(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, "u", allScopes...)
		require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, `{"name": "one"}`).status)
		require.Equal(t, http.StatusBadRequest, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, `{"name": "`+failName+`"}`).status)
		require.Equal(t, http.StatusInternalServerError, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, `{"name": "`+failOutbox+`"}`).status)
		require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, `{"name": "two"}`).status)
		var n int
		require.NoError(t, e.db.QueryRow("SELECT count(*) FROM accounts").Scan(&n))
		require.Equal(t, 2, n)

		evs, cursor := e.follow(t, orgA, tok, "", "")
		require.Len(t, evs, 2)
		assert.Equal(t, "one", evs[0]["data"].(map[string]any)["record"].(map[string]any)["name"])
		assert.Equal(t, "two", evs[1]["data"].(map[string]any)["record"].(map[string]any)["name"])
		assert.Equal(t, "2", cursor, "the sequence has no hole where a write rolled back")
		seq, _, err := eventstore.Head(context.Background(), e.db, e.dialect, orgA)
		require.NoError(t, err)
		assert.Equal(t, int64(2), seq)
	})
}

// TestFeedConfinement checks that a token sees only the events of records
// it could read.
func TestFeedConfinement(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		admin := e.codeToken(t, orgA, "u", allScopes...)
		for _, w := range []struct{ path, body string }{
			{"/v1/" + a1 + "/accounts", `{"name": "a1 account"}`},
			{"/v1/" + a2 + "/accounts", `{"name": "a2 account"}`},
			{"/v1/" + a1 + "/quotations", `{"name": "a1 quotation"}`},
			{"/v1/" + orgA + "/vehicles", `{"name": "A vehicle"}`},
			{"/v1/" + a2 + "/zones", `{"name": "a2 zone"}`},
		} {
			r := e.must(t, "POST", w.path, admin, w.body)
			require.Equal(t, http.StatusCreated, r.status, r.raw)
		}
		// An organization-wide zone, which no branch path creates.
		_, err := e.db.Exec("INSERT INTO zones (id, organization_id, branch_id, created_at, updated_at, name) VALUES ($1, $2, NULL, $3, $3, 'org zone')",
			"0a000000-0000-7000-8000-0000000000f0", orgA, e.dialect.Timestamp(time.Now()))
		require.NoError(t, err)
		b := e.codeToken(t, orgB, "u", allScopes...)
		require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+b1+"/accounts", b, `{"name": "b1 account"}`).status)

		names := func(scope, token, params string) []string {
			evs, _ := e.follow(t, scope, token, "", params)
			out := []string{}
			for _, ev := range evs {
				out = append(out, ev["data"].(map[string]any)["record"].(map[string]any)["name"].(string))
			}
			return out
		}
		all := []string{"a1 account", "a2 account", "a1 quotation", "A vehicle", "a2 zone"}
		assert.Equal(t, all, names(orgA, admin, ""))
		assert.Equal(t, []string{"a1 account", "a1 quotation", "A vehicle"}, names(a1, admin, ""), "a branch path: that branch and the organization-wide records")
		assert.Equal(t, []string{"a1 account", "a1 quotation", "A vehicle"}, names(orgA, e.ccToken(t, orgA, []string{a1}, allScopes...), ""), "an app sees its branches")
		assert.Equal(t, []string{"a1 account", "a2 account"}, names(orgA, e.codeToken(t, orgA, "u", events.ReadScope, "svc:accounts:read"), ""), "only the resources whose read scope the token has")
		assert.Equal(t, []string{}, names(orgA, e.codeToken(t, orgA, "u", events.ReadScope), ""))
		assert.Equal(t, []string{"a1 quotation", "A vehicle"}, names(orgA, admin, "&types=quotation.*,vehicle.created"))
		assert.Equal(t, []string{"b1 account"}, names(orgB, b, ""))

		for _, tc := range []struct {
			name, scope, token string
			status             int
			code               string
		}{
			{"another organization", orgB, admin, 404, "not_found"},
			{"another organization's branch", b1, admin, 404, "not_found"},
			{"a branch the app may not use", a2, e.ccToken(t, orgA, []string{a1}, allScopes...), 403, "insufficient_scope"},
			{"no svc:events:read", orgA, e.codeToken(t, orgA, "u", "svc:accounts:read"), 403, "insufficient_scope"},
			{"no token", orgA, "", 401, "unauthorized"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.must(t, "GET", "/v1/"+tc.scope+"/events", tc.token, "")
				assert.Equal(t, tc.status, r.status, r.raw)
				assert.Equal(t, tc.code, r.code())
			})
		}
	})
}

// TestFeedCursors checks pages, the cursors between them, parameters and
// retention.
func TestFeedCursors(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, "u", allScopes...)
		empty, r, err := e.feedPage("/v1/"+orgA+"/events", tok)
		require.NoError(t, err)
		require.Equal(t, 200, r.status, r.raw)
		assert.Equal(t, "0", *empty.NextCursor, "an empty feed still gives a cursor to poll from")
		assert.Equal(t, "v1", empty.Version)
		assert.NotNil(t, empty.Data)

		for i := range 7 {
			require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, fmt.Sprintf(`{"name": "n%d"}`, i)).status)
		}
		p1, _, err := e.feedPage("/v1/"+orgA+"/events?limit=3", tok)
		require.NoError(t, err)
		require.Len(t, p1.Data, 3)
		p2, _, err := e.feedPage("/v1/"+orgA+"/events?limit=3&after="+*p1.NextCursor, tok)
		require.NoError(t, err)
		require.Len(t, p2.Data, 3)
		p3, _, err := e.feedPage("/v1/"+orgA+"/events?limit=3&after="+*p2.NextCursor, tok)
		require.NoError(t, err)
		require.Len(t, p3.Data, 1)
		assert.Equal(t, "7", *p3.NextCursor)
		p4, _, err := e.feedPage("/v1/"+orgA+"/events?limit=3&after=7", tok)
		require.NoError(t, err)
		assert.Empty(t, p4.Data)
		assert.Equal(t, "7", *p4.NextCursor, "at the end, the cursor stays")

		for _, tc := range []struct{ name, query, code string }{
			{"a cursor past the end", "after=8", "invalid_request"},
			{"not a cursor", "after=abc", "invalid_request"},
			{"a negative cursor", "after=-1", "invalid_request"},
			{"a padded cursor", "after=07", "invalid_request"},
			{"limit 0", "limit=0", "invalid_request"},
			{"limit over the maximum", "limit=1001", "invalid_request"},
			{"an unknown type", "types=invoice.created", "invalid_request"},
			{"an unknown change", "types=account.moved", "invalid_request"},
			{"an unknown parameter", "offset=2", "invalid_request"},
			{"a parameter twice", "limit=2&limit=3", "invalid_request"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.must(t, "GET", "/v1/"+orgA+"/events?"+tc.query, tok, "")
				assert.Equal(t, 400, r.status, r.raw)
				assert.Equal(t, tc.code, r.code())
			})
		}
		r = e.must(t, "POST", "/v1/"+orgA+"/events", tok, "")
		assert.Equal(t, http.StatusMethodNotAllowed, r.status)

		// Retention: the first five events go; a cursor before them is gone.
		_, err = e.db.Exec("UPDATE waybill_events SET time = $1 WHERE seq <= 5", e.dialect.Timestamp(time.Now().Add(-8*24*time.Hour)))
		require.NoError(t, err)
		n, err := e.feed.Purge(context.Background(), time.Now().Add(-7*24*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(5), n)
		for _, after := range []string{"0", "4"} {
			r := e.must(t, "GET", "/v1/"+orgA+"/events?after="+after, tok, "")
			assert.Equal(t, http.StatusGone, r.status, r.raw)
			assert.Equal(t, "cursor_expired", r.code())
		}
		rest, _ := e.follow(t, orgA, tok, "5", "")
		assert.Len(t, rest, 2)
		start, _ := e.follow(t, orgA, tok, "", "")
		assert.Len(t, start, 2, "without a cursor the feed starts at the oldest event it keeps")
		n, err = e.feed.Purge(context.Background(), time.Now().Add(-7*24*time.Hour))
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// TestSequenceBounded checks that one call of Sequence numbers at most
// SequenceBatch events, first inserted first, and that the feed still
// gives them all, in order, as a consumer follows it.
func TestSequenceBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	ctx := context.Background()
	n := eventstore.SequenceBatch + 10
	_, err := e.db.ExecContext(ctx, `INSERT INTO waybill_events (organization_id, id, type, resource, branch_id, record_id, time, body)
		SELECT $1, gen_random_uuid()::text, 'account.created', 'accounts', $2, gen_random_uuid()::text, now(),
			'{"id":"' || n || '"}' FROM generate_series(1, $3::bigint) AS n`, orgA, a1, n)
	require.NoError(t, err)
	got, err := eventstore.Sequence(ctx, e.db, e.dialect)
	require.NoError(t, err)
	assert.Equal(t, int64(eventstore.SequenceBatch), got, "one call numbers one batch")
	head, _, err := eventstore.Head(ctx, e.db, e.dialect, orgA)
	require.NoError(t, err)
	assert.Equal(t, int64(eventstore.SequenceBatch), head)
	tok := e.codeToken(t, orgA, "u", allScopes...)
	var ids []string
	after := ""
	for len(ids) < n {
		p, r, err := e.feedPage("/v1/"+orgA+"/events?limit=1000&after="+after, tok)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		for _, raw := range p.Data {
			var ev map[string]any
			require.NoError(t, json.Unmarshal(raw, &ev))
			ids = append(ids, ev["id"].(string))
		}
		require.NotEqual(t, after, *p.NextCursor, "the feed moves on")
		after = *p.NextCursor
	}
	for i, id := range ids {
		require.Equal(t, strconv.Itoa(i+1), id, "in the order they were inserted")
	}
}

// TestFeedTypesBound: types lists at most events.MaxTypes event types,
// counted as given; a type given twice is kept once. More is a 400 in the
// error shape, however many: the database never sees them.
func TestFeedTypesBound(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, "u", allScopes...)
		require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+a1+"/accounts", tok, `{"name": "one"}`).status)
		require.Equal(t, http.StatusCreated, e.must(t, "POST", "/v1/"+orgA+"/vehicles", tok, `{"name": "two"}`).status)
		list := func(n int, types ...string) string {
			out := make([]string, n)
			for i := range out {
				out[i] = types[i%len(types)]
			}
			return strings.Join(out, ",")
		}
		typesOf := func(params string) []string {
			evs, _ := e.follow(t, orgA, tok, "", params)
			out := []string{}
			for _, ev := range evs {
				out = append(out, ev["type"].(string))
			}
			return out
		}

		assert.Equal(t, []string{"account.created"}, typesOf("&types=account.created,account.created"), "a duplicate is kept once")
		assert.Equal(t, []string{"account.created", "vehicle.created"},
			typesOf("&types="+list(events.MaxTypes, "account.created", "vehicle.*", "zone.deleted", "account.*")), "at most MaxTypes, duplicates counted")

		for _, tc := range []struct{ name, types string }{
			{"51 types", list(events.MaxTypes+1, "account.created", "account.updated", "account.deleted", "quotation.*", "vehicle.created", "zone.*")},
			{"51 times one type", list(events.MaxTypes+1, "account.created")},
			{"70,000 types", list(70_000, "zone.created", "zone.updated", "zone.deleted")},
			{"70,000 times *", list(70_000, "*")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := e.must(t, "GET", "/v1/"+orgA+"/events?types="+tc.types, tok, "")
				assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, "invalid_request", r.code())
				assert.Contains(t, r.body["error_description"], "at most 50 are allowed")
			})
		}
		// One long unknown type: quoted in part only.
		r := e.must(t, "GET", "/v1/"+orgA+"/events?types="+strings.Repeat("x", 100_000), tok, "")
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "invalid_request", r.code())
		assert.Less(t, len(r.raw), 1000)
	})
}
