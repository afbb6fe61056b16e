package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A delivery is a CloudEvent in structured mode: the CloudEvents SDK's
// HTTP binding reads it, as a receiver built on it does, and finds the
// event with its attributes and data.
func TestDispatcherDeliversAStructuredCloudEvent(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, e *dispatchEnv) {
		rc := newReceiver(t, nil)
		_, secret := e.addEndpoint(endpointSpec{URL: rc.url("a"), Types: []string{"*"}})
		rc.expect("a", secret)
		at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
		ev := e.addEvent(e.org, "quotation.created", "", "rec-1", at)
		n, err := e.dispatcher(nil).RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rc.requireClean()
		require.Len(t, rc.got, 1)
		got := rc.got[0]

		req := httptest.NewRequest(http.MethodPost, "/a", bytes.NewReader(got.Body))
		req.Header = got.Header.Clone()
		ce, err := cehttp.NewEventFromHTTPRequest(req)
		require.NoError(t, err, "the SDK's HTTP binding finds the event")
		require.NoError(t, ce.Validate())
		assert.Equal(t, ev.ID, ce.ID())
		assert.Equal(t, got.Header.Get("webhook-id"), ce.ID())
		assert.Equal(t, "quotation.created", ce.Type())
		assert.Equal(t, "/v1/"+e.org+"/quotations/rec-1", ce.Source())
		assert.Equal(t, "rec-1", ce.Subject())
		assert.True(t, at.Equal(ce.Time()), "time %s", ce.Time())
		assert.Equal(t, "application/json", ce.DataContentType())
		assert.Equal(t, e.org, ce.Extensions()["organizationid"])
		var data struct {
			Record  map[string]any `json:"record"`
			Changed []string       `json:"changed"`
		}
		require.NoError(t, json.Unmarshal(ce.Data(), &data))
		assert.Equal(t, map[string]any{"id": "rec-1"}, data.Record)
		assert.Equal(t, []string{}, data.Changed)
	})
}
