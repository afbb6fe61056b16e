package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook"
)

// A recovery does not reach before the events kept: with the API's
// EventRetention, not further back than it; without it, once retention has
// removed events, not before the oldest kept. Nothing is queued then.
func TestRecoverKeptEvents(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, read, write, "svc:quotations:read")
		ep := e.create(t, tok, orgA, `{"url":"`+publicURL+`","event_types":["quotation.*"]}`)
		path := endpoints(orgA) + "/" + ep["id"].(string) + "/recover"
		for seq := int64(1); seq <= 3; seq++ {
			e.addEvent(t, orgA, seq, uuid.Must(uuid.NewV7()).String(), "quotation.created")
			time.Sleep(2 * time.Millisecond)
		}
		times := make([]time.Time, 4)
		for seq := int64(1); seq <= 3; seq++ {
			var at any
			require.NoError(t, e.db.QueryRow(`SELECT time FROM waybill_events WHERE organization_id = $1 AND seq = $2`, orgA, seq).Scan(&at))
			var err error
			times[seq], err = query.ScanTimestamp(at)
			require.NoError(t, err)
		}
		// Retention removed the first.
		_, err := e.db.Exec(`DELETE FROM waybill_events WHERE organization_id = $1 AND seq = 1`, orgA)
		require.NoError(t, err)
		_, err = e.db.Exec(`UPDATE waybill_event_heads SET purged_through = 1 WHERE organization_id = $1`, orgA)
		require.NoError(t, err)

		r := e.do(t, http.MethodPost, path, tok, `{"since":"`+times[1].Format(time.RFC3339Nano)+`"}`)
		assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
		assert.Equal(t, "invalid_request", r.code())
		assert.Contains(t, r.body["error_description"], "oldest event kept")
		assert.Empty(t, e.deliveriesOf(t, ep["id"].(string)), "nothing queued")

		r = e.do(t, http.MethodPost, path, tok, `{"since":"`+times[2].Format(time.RFC3339Nano)+`"}`)
		require.Equal(t, http.StatusAccepted, r.status, r.raw)
		assert.Equal(t, 2.0, r.data()["queued"])
		assert.Nil(t, r.data()["next_since"])
		assert.Len(t, e.deliveriesOf(t, ep["id"].(string)), 2)
	})
	eachBackend(t, func(a *webhook.API) { a.EventRetention = time.Hour }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, read, write, "svc:quotations:read")
		ep := e.create(t, tok, orgA, `{"url":"`+publicURL+`","event_types":["quotation.*"]}`)
		path := endpoints(orgA) + "/" + ep["id"].(string) + "/recover"
		r := e.do(t, http.MethodPost, path, tok, `{"since":"`+time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339)+`"}`)
		assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
		assert.Contains(t, r.body["error_description"], "older than the events are kept")
		r = e.do(t, http.MethodPost, path, tok, `{"since":"`+time.Now().Add(-30*time.Minute).UTC().Format(time.RFC3339)+`"}`)
		assert.Equal(t, http.StatusAccepted, r.status, r.raw)
		assert.Equal(t, 0.0, r.data()["queued"])
	})
}

// deliveriesOf returns the ids of the deliveries of the endpoint.
func (e *env) deliveriesOf(t testing.TB, endpoint string) []string {
	t.Helper()
	rows, err := e.db.Query(`SELECT id FROM waybill_webhook_deliveries WHERE endpoint_id = $1`, endpoint)
	require.NoError(t, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}
