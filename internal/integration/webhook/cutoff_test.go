package webhook_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/webhook"
)

// An endpoint shows the app that registered it, and DisableAppEndpoints
// disables the endpoints of a disconnected app in that organization only,
// once per cut-off, whichever process comes first: the endpoints of other
// apps and of other organizations stay enabled, and an
// endpoint enabled again after the cut-off was handled stays enabled.
func TestDisableAppEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		ctx := t.Context()
		branches := map[string][]string{orgA: {a1, a2}, orgB: {b1}}
		app := func(org, clientID string) string {
			return e.sign(t, &bearer.Claims{Subject: "app-" + clientID, OrganizationID: org, ClientID: clientID, Scopes: readAll,
				BranchIDs: branches[org], Grant: bearer.GrantClientCredentials, AppName: clientID})
		}
		user := e.codeToken(t, orgA, readAll...) // of the app client-1
		register := func(token, org string) string {
			return e.create(t, token, org, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		}
		mine, mine2 := register(app(orgA, "market"), orgA), register(app(orgA, "market"), orgA)
		other := register(app(orgA, "other"), orgA)
		users := register(user, orgA)
		elsewhere := register(app(orgB, "market"), orgB)

		got := e.do(t, http.MethodGet, endpoints(orgA)+"/"+mine, app(orgA, "market"), "")
		assert.Equal(t, "market", got.data()["client_id"])
		got = e.do(t, http.MethodGet, endpoints(orgA)+"/"+users, user, "")
		assert.Equal(t, "client-1", got.data()["client_id"], "a user's token registers for its app")

		at := time.Now().Add(-time.Second)
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for i := range counts {
			wg.Go(func() {
				n, err := webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "market", at)
				assert.NoError(t, err)
				counts[i] = n
			})
		}
		wg.Wait()
		assert.ElementsMatch(t, []int{2, 0, 0, 0}, counts, "one process handles the cut-off")

		for _, id := range []string{mine, mine2} {
			ep := e.do(t, http.MethodGet, endpoints(orgA)+"/"+id, user, "").data()
			assert.Equal(t, "disabled", ep["status"])
			assert.Contains(t, ep["disabled_reason"], "the app market that registered it or last changed it was disconnected from the organization at "+at.UTC().Format(time.RFC3339))
		}
		for _, id := range []string{other, users} {
			assert.Equal(t, "enabled", e.do(t, http.MethodGet, endpoints(orgA)+"/"+id, user, "").data()["status"], id)
		}
		assert.Equal(t, "enabled", e.row(t, elsewhere).status, "another organization's cut-off is its own")

		// Connected again, the app enables an endpoint; the cut-off
		// handled before does not disable it again (a restart hands it
		// anew), a later one does.
		r := e.do(t, http.MethodPatch, endpoints(orgA)+"/"+mine, app(orgA, "market"), `{"status":"enabled"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		n, err := webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "market", at)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Equal(t, "enabled", e.row(t, mine).status)
		n, err = webhook.DisableAppEndpoints(ctx, e.db, e.dialect, orgA, "market", at.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, "disabled", e.row(t, mine).status)

	})
}
