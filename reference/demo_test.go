package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// demoServer is a token service on a migrated database of the backend,
// served over HTTP so that the printed credentials can be tried.
type demoServer struct {
	db     *sql.DB
	tokens *oauth.Server
	url    string
}

func newDemoServer(t *testing.T, b backend) demoServer {
	t.Helper()
	db := openTestDB(t, b)
	keys, err := bearer.NewKeySet(bearer.SecretKey([]byte("a-test-signing-key-of-at-least-32-bytes")))
	require.NoError(t, err)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	tokens := newOAuthServer(db, newOAuthStore(db, b.dialect), keys, srv.URL, testLogger(t))
	h = newHandler(db, tokens, nil)
	return demoServer{db: db, tokens: tokens, url: srv.URL}
}

func count(t *testing.T, db *sql.DB, stmt string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), stmt, args...).Scan(&n), stmt)
	return n
}

var (
	clientIDLine     = regexp.MustCompile(`(?m)^  client_id: +(\S+)`)
	clientSecretLine = regexp.MustCompile(`(?m)^  client_secret: (\S+)`)
	passwordLine     = regexp.MustCompile(`(?m)^  user: +demo@waybill\.test  password: (\S+)`)
	orgLine          = regexp.MustCompile(`organization "Demo Transport" (\S+), branches North (\S+) and South (\S+)\.`)
)

// TestSeedDemo seeds the demo twice on both databases: the first call
// writes everything and prints working credentials, the second writes
// nothing and prints the client id and how to rotate its secret.
func TestSeedDemo(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := newDemoServer(t, b)
			ctx := t.Context()

			var out bytes.Buffer
			require.NoError(t, seedDemo(ctx, s.db, b.dialect, s.tokens, &out, s.url))
			first := out.String()
			t.Log(first)

			m := orgLine.FindStringSubmatch(first)
			require.NotNil(t, m, "the organization line")
			org, north, south := m[1], m[2], m[3]
			clientID := clientIDLine.FindStringSubmatch(first)
			secret := clientSecretLine.FindStringSubmatch(first)
			password := passwordLine.FindStringSubmatch(first)
			require.NotNil(t, clientID, "the client id line")
			require.NotNil(t, secret, "the client secret line")
			require.NotNil(t, password, "the password line")
			assert.Contains(t, first, "waybill admin app rotate-secret --client-id "+clientID[1])
			tokenLine := "TOKEN=$(curl -s -X POST '" + s.url + "/v1/oauth/token' -d grant_type=client_credentials -d client_id=" +
				clientID[1] + " -d client_secret=" + secret[1]
			assert.Contains(t, first, tokenLine)
			assert.Contains(t, first, "curl -s '"+s.url+"/v1/"+north+"/quotations?limit=5&sort=quotation_date:desc' -H \"Authorization: Bearer $TOKEN\"")
			assert.Contains(t, first, "curl -s '"+s.url+"/v1/"+org+"/events?limit=5' -H \"Authorization: Bearer $TOKEN\"")

			// What was seeded.
			assert.Equal(t, 1, count(t, s.db, "SELECT count(*) FROM organizations WHERE name = $1", demoOrganization))
			assert.ElementsMatch(t, []string{north, south}, mustBranches(t, s.db, org))
			assert.Equal(t, len(masterData), count(t, s.db, "SELECT count(*) FROM master_data WHERE organization_id = $1", org))
			total := 0
			for _, r := range resources() {
				if r.ReadOnly {
					continue
				}
				n := count(t, s.db, "SELECT count(*) FROM "+tableOf(r)+" WHERE organization_id = $1", org)
				assert.Positive(t, n, r.Name)
				total += n
			}
			assert.GreaterOrEqual(t, total, 300, "a few hundred records")
			for _, table := range []string{"items", "tariffs", "zones"} {
				assert.Positive(t, count(t, s.db, "SELECT count(*) FROM "+table+" WHERE organization_id = $1 AND branch_id IS NULL", org), "organization-wide %s", table)
				assert.Positive(t, count(t, s.db, "SELECT count(*) FROM "+table+" WHERE branch_id = $1", north), "%s of North", table)
			}
			for _, branch := range []string{north, south} {
				n := count(t, s.db, "SELECT count(*) FROM quotations WHERE branch_id = $1", branch)
				assert.Equal(t, n, count(t, s.db, "SELECT count(DISTINCT quotation_number) FROM quotations WHERE branch_id = $1 AND quotation_number LIKE 'Q-____-______'", branch))
				assert.Equal(t, n+1, count(t, s.db, "SELECT sum(next_value) FROM number_sequences WHERE branch_id = $1 AND kind = 'quotation'", branch),
					"the counters continue after the demo's numbers")
				assert.Positive(t, count(t, s.db, "SELECT count(*) FROM quotations WHERE branch_id = $1 AND status = 'accepted'", branch))
			}
			assert.Zero(t, count(t, s.db, "SELECT count(*) FROM invoices WHERE abs(total_amount - net_amount - tax_amount) > 0.001"))
			assert.Zero(t, count(t, s.db, "SELECT count(*) FROM quotations WHERE valid_until < quotation_date"))

			// The printed credentials work.
			u, err := newDirectory(s.db).Authenticate(ctx, demoEmail, password[1])
			require.NoError(t, err, "the printed password")
			ms, err := newDirectory(s.db).Memberships(ctx, u.ID)
			require.NoError(t, err)
			assert.Equal(t, []oauth.Membership{{OrganizationID: org, Name: demoOrganization, Admin: true}}, ms)

			res, body := postForm(t, s.url+"/v1/oauth/token", url.Values{
				"grant_type": {"client_credentials"}, "client_id": {clientID[1]}, "client_secret": {secret[1]},
			}, "", "")
			require.Equal(t, http.StatusOK, res.StatusCode, "%v", body)
			claims := claimsOf(t, body["access_token"].(string))
			assert.Equal(t, org, claims["organization_id"])
			assert.ElementsMatch(t, []any{north, south}, claims["oauth_branch_ids"])
			scopes, _ := claims["oauth_scopes"].([]any)
			assert.Len(t, scopes, 15+11+3, "read for every resource, write for the writable ones, the feed's and the webhooks'")
			assert.Contains(t, scopes, "svc:quotations:read")
			assert.Contains(t, scopes, "svc:quotations:write")
			assert.NotContains(t, scopes, "svc:branches:write")
			for _, scope := range []string{"svc:events:read", "svc:webhooks:read", "svc:webhooks:write"} {
				assert.Contains(t, scopes, scope)
			}

			if curl, err := exec.LookPath("curl"); err == nil {
				line := tokenLine + ` | sed -E 's/.*"access_token":"([^"]+)".*/\1/') && printf %s "$TOKEN"`
				got, err := exec.CommandContext(ctx, "sh", "-c", line).Output()
				require.NoError(t, err, "the printed token line runs (%s)", curl)
				assert.Len(t, strings.Split(string(got), "."), 3, "it yields a JWT: %q", got)
			}

			// The second call writes nothing and cannot show the secret.
			out.Reset()
			require.NoError(t, seedDemo(ctx, s.db, b.dialect, s.tokens, &out, s.url))
			second := out.String()
			t.Log(second)
			assert.Contains(t, second, "Demo data already seeded")
			assert.Contains(t, second, "client_id: "+clientID[1])
			assert.Contains(t, second, "waybill admin app rotate-secret --client-id "+clientID[1])
			assert.Contains(t, second, "go run ./reference admin app rotate-secret --client-id "+clientID[1], "the form that works from a source checkout")
			assert.Contains(t, second, "/v1/"+north+"/quotations")
			assert.Contains(t, second, "/v1/"+org+"/events")
			assert.NotContains(t, second, secret[1])
			assert.NotContains(t, second, password[1])
			assert.Contains(t, second, "Try the authorization-code flow", "the demo app has the demo's redirect URI")

			// A demo app seeded by an earlier version, without that redirect
			// URI, is offered no code flow it cannot complete.
			_, err = s.db.ExecContext(ctx, "UPDATE oauth_apps SET redirect_uris = '[]' WHERE client_id = $1", clientID[1])
			require.NoError(t, err)
			out.Reset()
			require.NoError(t, seedDemo(ctx, s.db, b.dialect, s.tokens, &out, s.url))
			assert.NotContains(t, out.String(), "Try the authorization-code flow")
			assert.Equal(t, 1, count(t, s.db, "SELECT count(*) FROM organizations WHERE name = $1", demoOrganization))
			assert.Equal(t, 1, count(t, s.db, "SELECT count(*) FROM oauth_apps WHERE organization_id = $1", org))
			assert.Equal(t, 120, count(t, s.db, "SELECT count(*) FROM quotations WHERE organization_id = $1", org))
		})
	}
}

// TestSeedDemoResumes covers the odd starts: an app that was not
// registered when the previous start stopped, and a demo user that exists
// already.
func TestSeedDemoResumes(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t, backends()[0])
	ctx := t.Context()
	other := newID()
	mustExec(t, s.db, "INSERT INTO organizations (id, name) VALUES ($1, 'Elsewhere')", other)
	require.NoError(t, inTx(ctx, s.db, func(tx *sql.Tx) error {
		return insertUser(ctx, tx, newID(), demoEmail, "not-a-hash", []string{other}, false)
	}))

	var out bytes.Buffer
	require.NoError(t, seedDemo(ctx, s.db, query.SQLite, s.tokens, &out, s.url))
	assert.Contains(t, out.String(), "demo@waybill.test  (existed already; its password is unchanged)")
	assert.NotRegexp(t, passwordLine, out.String())

	// As if the start had stopped before the app was registered.
	mustExec(t, s.db, "UPDATE demo_seed SET client_id = NULL")
	out.Reset()
	require.NoError(t, seedDemo(ctx, s.db, query.SQLite, s.tokens, &out, s.url))
	assert.Regexp(t, clientSecretLine, out.String(), "the app is registered now, and its secret shown")
	assert.Equal(t, 1, count(t, s.db, "SELECT count(*) FROM organizations WHERE name = $1", demoOrganization))
}

func mustBranches(t *testing.T, db *sql.DB, org string) []string {
	t.Helper()
	ids, err := newBranches(db).List(t.Context(), org)
	require.NoError(t, err)
	return ids
}

// The authorization-code walkthrough the demo prints works as printed: the
// authorization URL leads through the sign-in and consent pages to the
// demo's redirect URI with a code, and the printed exchange command, run by
// the shell with CODE set, returns an access token and a refresh token.
func TestSeedDemoCodeFlowAsPrinted(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		require.Empty(t, os.Getenv("CI"), "the walkthrough runs curl, as a reader would")
		t.Skip("curl is not installed")
	}
	b := backends()[0]
	s := newDemoServer(t, b)
	var out bytes.Buffer
	require.NoError(t, seedDemo(t.Context(), s.db, b.dialect, s.tokens, &out, s.url))
	printed := out.String()
	password := passwordLine.FindStringSubmatch(printed)
	org := orgLine.FindStringSubmatch(printed)
	authorize := regexp.MustCompile(`(?m)^     (http\S+/auth/v1/oauth/authorize\?\S+)$`).FindStringSubmatch(printed)
	exchange := regexp.MustCompile(`(?m)^     (curl -s -X POST '\S+/auth/v1/oauth/token' .*)$`).FindStringSubmatch(printed)
	require.NotNil(t, password, printed)
	require.NotNil(t, authorize, "the authorization URL:\n%s", printed)
	require.NotNil(t, exchange, "the exchange command:\n%s", printed)
	assert.Contains(t, printed, "CODE=<the code>")

	// The browser's part.
	back := lcBrowse(t, s.url, authorize[1], demoRedirectURI, demoEmail, password[1], org[1])
	assert.True(t, strings.HasPrefix(back.String(), demoRedirectURI+"?"), "back at %s", back)
	assert.Equal(t, "demo", back.Query().Get("state"))
	code := back.Query().Get("code")
	require.NotEmpty(t, code)
	// Step 2 shows the address the browser really lands on, parameter by parameter.
	var shape []string
	for _, p := range strings.Split(back.RawQuery, "&") {
		name, value, _ := strings.Cut(p, "=")
		if name != "state" {
			value = "..."
		}
		shape = append(shape, name+"="+value)
	}
	assert.Contains(t, printed, demoRedirectURI+"?"+strings.Join(shape, "&")+" ", "step 2 shows %s", back)

	// The printed command, as the shell runs it.
	cmd := exec.CommandContext(t.Context(), "sh", "-c", exchange[1])
	cmd.Env = append(os.Environ(), "CODE="+code, "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
	stdout, err := cmd.Output()
	require.NoError(t, err, "%s", exchange[1])
	var tokens map[string]any
	require.NoError(t, json.Unmarshal(stdout, &tokens), "%s", stdout)
	assert.NotEmpty(t, tokens["access_token"], "%s", stdout)
	assert.NotEmpty(t, tokens["refresh_token"], "%s", stdout)
	assert.Equal(t, "svc:quotations:read", tokens["scope"])
}
