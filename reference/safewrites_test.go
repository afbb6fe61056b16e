package main

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// swAnswer is an answer with its raw body.
type swAnswer struct {
	status int
	header http.Header
	body   string
}

// swDo sends a request to the API with token (no Authorization when
// empty), a JSON body when not empty, and the headers given, which may
// replace the Content-Type.
func swDo(t *testing.T, method, url, token, body string, header map[string]string) swAnswer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return swAnswer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// TestSafeWritesThroughTheServer: conditional writes and idempotency keys
// as a sync client meets them, through the reference server on both
// databases, with the REST rate limit on.
func TestSafeWritesThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newSyncWorld(t, b.url(t), "1000")
			base, branch, token := w.base, w.branch, w.token
			accounts := base + "/v1/" + branch + "/accounts"

			t.Run("one writer of many wins an ETag", func(t *testing.T) {
				first := swDo(t, http.MethodPost, accounts, token, `{"company_name":"Race","account_type":"customer"}`, nil)
				require.Equal(t, http.StatusCreated, first.status, first.body)
				item := base + first.header.Get("Location")
				tag := first.header.Get("ETag")
				for round := range 10 {
					answers := make([]swAnswer, 6)
					var wg sync.WaitGroup
					for i := range answers {
						wg.Go(func() {
							answers[i] = swDo(t, http.MethodPatch, item, token, `{"comment":"writer `+strings.Repeat("x", i+1)+`"}`, map[string]string{"If-Match": tag})
						})
					}
					wg.Wait()
					won := 0
					for _, a := range answers {
						switch a.status {
						case http.StatusOK:
							won++
							tag = a.header.Get("ETag")
						case http.StatusPreconditionFailed:
							assert.Contains(t, a.body, `"error":"precondition_failed"`)
						default:
							t.Fatalf("round %d: %d %s", round, a.status, a.body)
						}
					}
					require.Equal(t, 1, won, "round %d", round)
				}
				got := swDo(t, http.MethodGet, item, token, "", map[string]string{"If-None-Match": tag})
				assert.Equal(t, http.StatusNotModified, got.status, "the last winner's tag is the stored version")
			})

			t.Run("twenty retries at once create one record", func(t *testing.T) {
				body := `{"company_name":"Once","account_type":"customer"}`
				key := map[string]string{"Idempotency-Key": "0e5b1f4c-9a55-4d0f-a1d2-5b8f3e2c7a90"}
				answers := make([]swAnswer, 20)
				var wg sync.WaitGroup
				for i := range answers {
					wg.Go(func() { answers[i] = swDo(t, http.MethodPost, accounts, token, body, key) })
				}
				wg.Wait()
				for i, a := range answers {
					require.Equal(t, http.StatusCreated, a.status, "answer %d: %s", i, a.body)
					assert.Equal(t, answers[0].body, a.body, "answer %d", i)
					assert.Equal(t, answers[0].header.Get("Location"), a.header.Get("Location"), "answer %d", i)
				}
				list := swDo(t, http.MethodGet, accounts+"?filter=company_name:eq:Once&Prefer=x", token, "", nil)
				assert.Equal(t, http.StatusBadRequest, list.status, "unknown parameters are refused: %s", list.body)
				list = swDo(t, http.MethodGet, accounts+"?filter=company_name:eq:Once&fields=id", token, "", map[string]string{"Prefer": "count=exact"})
				require.Equal(t, http.StatusOK, list.status, list.body)
				assert.Contains(t, list.body, `"total":1,`, "one record")
				assert.Equal(t, "count=exact", list.header.Get("Preference-Applied"))

				// A replay is a request: the REST limit, which sets its
				// RateLimit headers on every answer it counts, counted each.
				replay := swDo(t, http.MethodPost, accounts, token, body, key)
				assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
				assert.NotEmpty(t, replay.header.Get("RateLimit"), "the replay was counted")
				written := 0
				for _, a := range answers {
					assert.NotEmpty(t, a.header.Get("RateLimit"), "every answer was counted")
					if a.header.Get("Idempotent-Replayed") == "" {
						written++
					}
				}
				assert.Equal(t, 1, written, "one answer is the write, every other a replay of it")
				list = swDo(t, http.MethodGet, accounts+"?limit=1", token, "", map[string]string{"Prefer": "count=none"})
				assert.Contains(t, list.body, `"total":null`)

				reused := swDo(t, http.MethodPost, accounts, token, `{"company_name":"Other","account_type":"customer"}`, key)
				assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
				assert.Contains(t, reused.body, `"error":"idempotency_key_reused"`)
			})
		})
	}
}

// TestReplaysAreChargedThroughTheServer: through the reference server on
// both databases, with --rate-rest 3, a replay of an Idempotency-Key and a
// 422 idempotency_key_reused count against the organization's limit like
// any request, and over it are 429 with no stored answer.
func TestReplaysAreChargedThroughTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newSyncWorld(t, b.url(t), "3")
			accounts := w.base + "/v1/" + w.branch + "/accounts"
			body := `{"company_name":"Charged","account_type":"customer"}`
			other := `{"company_name":"Other","account_type":"customer"}`
			key := map[string]string{"Idempotency-Key": "5f1d2c3b-charged"}
			remaining := func(a swAnswer) string {
				t.Helper()
				state := a.header.Get("RateLimit")
				require.True(t, strings.HasPrefix(state, `"rest";r=`), "RateLimit %q", state)
				return strings.SplitN(strings.TrimPrefix(state, `"rest";r=`), ";", 2)[0]
			}

			first := swDo(t, http.MethodPost, accounts, w.token, body, key)
			require.Equal(t, http.StatusCreated, first.status, first.body)
			assert.Equal(t, "2", remaining(first))
			replay := swDo(t, http.MethodPost, accounts, w.token, body, key)
			require.Equal(t, http.StatusCreated, replay.status, replay.body)
			assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
			assert.Equal(t, first.body, replay.body)
			assert.Equal(t, "1", remaining(replay), "the replay was counted")
			reused := swDo(t, http.MethodPost, accounts, w.token, other, key)
			assert.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.body)
			assert.Equal(t, "0", remaining(reused), "the 422 was counted")

			for _, b := range []string{body, other} {
				refused := swDo(t, http.MethodPost, accounts, w.token, b, key)
				assert.Equal(t, http.StatusTooManyRequests, refused.status, refused.body)
				assert.Contains(t, refused.body, `"error":"rate_limited"`)
				assert.Contains(t, refused.body, `"error_description":`)
				assert.NotContains(t, refused.body, `"data"`, "no stored answer over the limit")
				assert.Empty(t, refused.header.Get("Idempotent-Replayed"))
				assert.Empty(t, refused.header.Get("Location"))
				assert.NotEmpty(t, refused.header.Get("Retry-After"))
			}
		})
	}
}

// syncWorld is a reference server in process on a database of its own,
// with an organization, a branch and the token of an app that may read
// and write its accounts.
type syncWorld struct {
	dbURL, base, org, branch, token string
}

// newSyncWorld migrates dbURL, creates the organization, branch and app,
// and starts serve on it with --rate-rest rest; the server stops when the
// test ends.
func newSyncWorld(t *testing.T, dbURL, rest string) syncWorld {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
		"--scopes", "svc:accounts:read svc:accounts:write", "--database-url", dbURL)
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--rate-rest", rest, "--rate-rest-app", "0"}, env(nil))
	t.Cleanup(func() { require.NoError(t, stop()) })
	token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})
	return syncWorld{dbURL: dbURL, base: base, org: org, branch: branch, token: token}
}
