package resource_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/ratelimit"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// countRows returns the number of rows of table.
func (e *env) countRows(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

// sameAnswer asserts that two answers of one idempotent write are the same.
func sameAnswer(t *testing.T, first, again response) {
	t.Helper()
	assert.Equal(t, first.status, again.status)
	assert.Equal(t, first.raw, again.raw)
	for _, h := range []string{"Location", "ETag", "Content-Type"} {
		assert.Equal(t, first.header.Get(h), again.header.Get(h), h)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			var charged atomic.Int64
			var mu sync.Mutex
			clock := time.Now().UTC()
			e := newEnvWith(t, b, func(reg *resource.Registry, _ []*resource.Resource) {
				reg.Middleware = func(next http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						charged.Add(1)
						next.ServeHTTP(w, r)
					})
				}
				reg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			})
			advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"
			body := `{"company_name":"Acme","account_type":"customer"}`
			key := map[string]string{"Idempotency-Key": "7d6f1c1e-4f5a-4a53-9b31-1f0e9a2c0b11"}

			first := e.doWith(t, http.MethodPost, accounts, token, body, key)
			require.Equal(t, http.StatusCreated, first.status, first.raw)
			assert.Empty(t, first.header.Get("Idempotent-Replayed"))
			before := charged.Load()
			again := e.doWith(t, http.MethodPost, accounts, token, body, key)
			sameAnswer(t, first, again)
			assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
			assert.Equal(t, before+1, charged.Load(), "a replay is a request: it passes the Middleware, which a rate limit is")
			quoted := e.doWith(t, http.MethodPost, accounts, token, body, map[string]string{"Idempotency-Key": `"` + key["Idempotency-Key"] + `"`})
			sameAnswer(t, first, quoted)
			assert.Equal(t, 1, e.countRows(t, "accounts"))

			t.Run("the key with another request", func(t *testing.T) {
				for _, tc := range []struct{ method, path, body string }{
					{http.MethodPost, accounts, `{"company_name":"Other","account_type":"customer"}`},
					{http.MethodPost, "/v1/" + a2 + "/accounts", body},
				} {
					r := e.doWith(t, tc.method, tc.path, token, tc.body, key)
					assert.Equal(t, 422, r.status, r.raw)
					assert.Equal(t, "idempotency_key_reused", r.code())
				}
				assert.Equal(t, 1, e.countRows(t, "accounts"), "nothing changed")
			})

			t.Run("keys belong to a client", func(t *testing.T) {
				other := e.ccToken(t, orgA, []string{a1}, allScopes...)
				r := e.doWith(t, http.MethodPost, accounts, other, body, key)
				assert.Equal(t, http.StatusCreated, r.status, r.raw)
				assert.Empty(t, r.header.Get("Idempotent-Replayed"))
				assert.NotEqual(t, first.data()["id"], r.data()["id"])
			})

			t.Run("keys belong to a user", func(t *testing.T) {
				// Another user of the same app, with the key: a new key,
				// which neither replays the first user's answer nor tells
				// that the key was used, whatever the request.
				user2 := e.sign(t, &bearer.Claims{Subject: "user-2", OrganizationID: orgA, ClientID: "client-1", Scopes: allScopes})
				mine := `{"company_name":"User Two","account_type":"carrier"}`
				r := e.doWith(t, http.MethodPost, accounts, user2, mine, key)
				require.Equal(t, http.StatusCreated, r.status, r.raw)
				assert.Empty(t, r.header.Get("Idempotent-Replayed"))
				assert.NotEqual(t, first.data()["id"], r.data()["id"])
				assert.Equal(t, "User Two", r.data()["company_name"])
				again := e.doWith(t, http.MethodPost, accounts, user2, mine, key)
				sameAnswer(t, r, again)
				assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
				// The first user's key still answers the first user.
				sameAnswer(t, first, e.doWith(t, http.MethodPost, accounts, token, body, key))
			})

			t.Run("PATCH", func(t *testing.T) {
				item := first.header.Get("Location")
				k := map[string]string{"Idempotency-Key": "patch-1"}
				p1 := e.doWith(t, http.MethodPatch, item, token, `{"comment":"once"}`, k)
				require.Equal(t, http.StatusOK, p1.status, p1.raw)
				advance(time.Second)
				p2 := e.doWith(t, http.MethodPatch, item, token, `{"comment":"once"}`, k)
				sameAnswer(t, p1, p2)
				assert.Equal(t, "true", p2.header.Get("Idempotent-Replayed"))
				got := e.doWith(t, http.MethodGet, item, token, "", nil)
				assert.Equal(t, p1.data()["updated_at"], got.data()["updated_at"], "the replay wrote nothing")
			})

			t.Run("a refused write stores nothing", func(t *testing.T) {
				k := map[string]string{"Idempotency-Key": "refused-then-fixed"}
				r := e.doWith(t, http.MethodPost, accounts, token, `{"company_name":"Acme"}`, k)
				assert.Equal(t, http.StatusBadRequest, r.status)
				r = e.doWith(t, http.MethodPost, accounts, token, `{"company_name":"Fixed","account_type":"carrier"}`, k)
				assert.Equal(t, http.StatusCreated, r.status, r.raw)
			})

			t.Run("bad keys", func(t *testing.T) {
				for _, k := range []string{`""`, strings.Repeat("k", 256), "two words", `a"b`, "caf\u00e9"} {
					r := e.doWith(t, http.MethodPost, accounts, token, body, map[string]string{"Idempotency-Key": k})
					assert.Equal(t, http.StatusBadRequest, r.status, k)
					assert.Contains(t, r.body["error_description"], "Idempotency-Key", k)
				}
			})

			t.Run("keys expire", func(t *testing.T) {
				advance(resource.DefaultIdempotencyTTL + time.Minute)
				r := e.doWith(t, http.MethodPost, accounts, token, `{"company_name":"Later","account_type":"customer"}`, key)
				assert.Equal(t, http.StatusCreated, r.status, "an expired key is a new key: %s", r.raw)
				advance(resource.DefaultIdempotencyTTL + time.Minute)
				n, err := e.registry.PurgeIdempotencyKeys(t.Context())
				require.NoError(t, err)
				assert.Positive(t, n)
				assert.Zero(t, e.countRows(t, "waybill_idempotency_keys"))
			})
		})
	}
}

// TestIdempotentRetriesAtOnce: the same POST sent 20 times at once with one
// key creates one record, and every answer is the same.
func TestIdempotentRetriesAtOnce(t *testing.T) {
	t.Parallel()
	const retries = 20
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			for round := range 3 {
				key := map[string]string{"Idempotency-Key": "burst-" + string(rune('a'+round))}
				answers := make([]response, retries)
				var wg sync.WaitGroup
				for i := range retries {
					wg.Go(func() {
						answers[i] = e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, `{"company_name":"Burst","account_type":"customer"}`, key)
					})
				}
				wg.Wait()
				for i := range answers {
					require.Equal(t, http.StatusCreated, answers[i].status, "round %d, answer %d: %s", round, i, answers[i].raw)
					sameAnswer(t, answers[0], answers[i])
				}
				assert.Equal(t, round+1, e.countRows(t, "accounts"), "round %d: one record", round)
				// A later retry finds the stored answer before it writes.
				later := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, `{"company_name":"Burst","account_type":"customer"}`, key)
				sameAnswer(t, answers[0], later)
				assert.Equal(t, "true", later.header.Get("Idempotent-Replayed"))
				assert.Equal(t, round+1, e.countRows(t, "accounts"), "round %d: still one record", round)
			}
		})
	}
}

// TestIdempotencyInProgress: a retry that waits, until its deadline, for a
// first request that has not finished gets 409 (PostgreSQL, where the
// first request's transaction holds the key's row).
func TestIdempotencyInProgress(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, backends[0], func(reg *resource.Registry, _ []*resource.Resource) {
		reg.Middleware = func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond)
				defer cancel()
				next.ServeHTTP(w, r.WithContext(ctx))
			})
		}
	})
	require.Equal(t, query.Postgres, e.dialect)
	token := e.codeToken(t, orgA, allScopes...)
	// The first request, between its write and its commit.
	tx, err := e.db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.Exec(`INSERT INTO waybill_idempotency_keys (organization_id, client_id, user_id, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
		VALUES ($1, 'client-1', 'user-1', 'slow', 'x', 201, '{}', '{}', now(), now() + interval '1 day')`, orgA)
	require.NoError(t, err)

	r := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, `{"company_name":"Acme","account_type":"customer"}`, map[string]string{"Idempotency-Key": "slow"})
	assert.Equal(t, http.StatusConflict, r.status, r.raw)
	assert.Equal(t, "idempotency_in_progress", r.code())
	require.NoError(t, tx.Rollback())
	assert.Equal(t, 0, e.countRows(t, "accounts"), "the waiting write was rolled back")
}

// byOrganization keys a rate limit by the organization of the request's
// tenant, as a server's REST limit does.
func byOrganization(r *http.Request) (string, bool) {
	t, ok := tenancy.FromContext(r.Context())
	return t.OrganizationID, ok
}

// TestIdempotentReplaysAreRateLimited: a replay, and a request that reuses
// a key for another request, are requests. The registry's Middleware, here
// a rate limit of 4 a minute per organization, counts each, and over the
// limit refuses them with 429 before their key is looked up: no stored
// answer is given.
func TestIdempotentReplaysAreRateLimited(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, b, func(reg *resource.Registry, _ []*resource.Resource) {
				reg.Middleware = ratelimit.MiddlewareWithOptions(ratelimit.Options{
					Limiter: ratelimit.NewMemory(ratelimit.MemoryOptions{}),
					Limit:   ratelimit.Limit{Name: "rest", Quota: 4, Window: time.Minute},
					Key:     byOrganization,
				})
			})
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"
			body := `{"company_name":"Acme","account_type":"customer"}`
			other := `{"company_name":"Other","account_type":"customer"}`
			key := map[string]string{"Idempotency-Key": "charged-1"}
			remaining := func(r response) string {
				t.Helper()
				state := r.header.Get("RateLimit")
				require.True(t, strings.HasPrefix(state, `"rest";r=`), "RateLimit %q", state)
				return strings.SplitN(strings.TrimPrefix(state, `"rest";r=`), ";", 2)[0]
			}

			first := e.doWith(t, http.MethodPost, accounts, token, body, key)
			require.Equal(t, http.StatusCreated, first.status, first.raw)
			assert.Equal(t, "3", remaining(first))
			for _, want := range []string{"2", "1"} {
				r := e.doWith(t, http.MethodPost, accounts, token, body, key)
				sameAnswer(t, first, r)
				assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
				assert.Equal(t, want, remaining(r), "a replay counts like any request")
			}
			reused := e.doWith(t, http.MethodPost, accounts, token, other, key)
			assert.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.raw)
			assert.Equal(t, "idempotency_key_reused", reused.code())
			assert.Equal(t, "0", remaining(reused), "a 422 counts like any request")

			for _, b := range []string{body, other} {
				r := e.doWith(t, http.MethodPost, accounts, token, b, key)
				assert.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
				assert.Equal(t, "rate_limited", r.code())
				assert.NotEmpty(t, r.body["error_description"])
				assert.NotEmpty(t, r.header.Get("Retry-After"))
				assert.Empty(t, r.header.Get("Idempotent-Replayed"), "no stored answer over the limit")
				assert.Empty(t, r.header.Get("Location"))
				assert.Nil(t, r.data())
			}
			assert.Equal(t, 1, e.countRows(t, "accounts"))
		})
	}
}
