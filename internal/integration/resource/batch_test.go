package resource_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
)

// changeLog is an Outbox that keeps the changes it is told of, in order:
// what a batch write recorded, and nothing of one that rolled back.
type changeLog struct {
	mu      sync.Mutex
	pending map[*sql.Tx][]string
	done    []string
}

func (l *changeLog) Append(_ context.Context, tx *sql.Tx, c *resource.Change) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[tx] = append(l.pending[tx], c.Operation.String()+" "+c.ID)
	return nil
}

// committed keeps the changes of a transaction that committed (see
// AfterCommit, called once per change).
func (l *changeLog) committed(c *resource.Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = append(l.done, c.Operation.String()+" "+c.ID)
}

func (l *changeLog) changes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.done)
}

// batchEnv is an env whose writable resources have external_id, with a
// changeLog and a record of what ChargeExtra was asked.
type batchEnv struct {
	*env
	log     *changeLog
	mu      sync.Mutex
	charged []int
}

func newBatchEnv(t *testing.T, b backend) *batchEnv {
	be := &batchEnv{log: &changeLog{pending: map[*sql.Tx][]string{}}}
	be.env = newEnvWith(t, b, func(reg *resource.Registry, rs []*resource.Resource) {
		for _, r := range rs {
			r.ExternalID = !r.ReadOnly
		}
		reg.Outbox = be.log
		reg.AfterCommit = be.log.committed
		reg.ChargeExtra = func(_ http.ResponseWriter, _ *http.Request, extra int) error {
			be.mu.Lock()
			defer be.mu.Unlock()
			be.charged = append(be.charged, extra)
			return nil
		}
	})
	return be
}

// account is an account item of a batch, with external_id ext ("" for
// none).
func account(name, ext string) string {
	if ext == "" {
		return fmt.Sprintf(`{"company_name":%q,"account_type":"customer"}`, name)
	}
	return fmt.Sprintf(`{"company_name":%q,"account_type":"customer","external_id":%q}`, name, ext)
}

func batch(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

// refused returns the indexes and codes of the errors of a refused batch.
func refused(t *testing.T, r response) map[int]string {
	t.Helper()
	errs, ok := r.body["errors"].([]any)
	require.True(t, ok, "errors is a list: %s", r.raw)
	out := map[int]string{}
	for _, e := range errs {
		m := e.(map[string]any)
		assert.NotEmpty(t, m["error_description"])
		out[int(m["index"].(float64))] = m["error"].(string)
	}
	return out
}

func TestBatchCreate(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newBatchEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"

			r := e.do(t, http.MethodPost, accounts, token, batch(account("One", "ERP-1"), account("Two", ""), account("Three", "ERP-3")))
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			data := r.list()
			require.Len(t, data, 3)
			var ids []string
			for i, name := range []string{"One", "Two", "Three"} {
				rec := data[i].(map[string]any)
				assert.Equal(t, name, rec["company_name"])
				assert.Equal(t, "active", rec["status"], "the create hook ran for every item")
				ids = append(ids, rec["id"].(string))
			}
			assert.Equal(t, "ERP-1", data[0].(map[string]any)["external_id"])
			assert.Nil(t, data[1].(map[string]any)["external_id"])
			assert.Equal(t, []string{"created " + ids[0], "created " + ids[1], "created " + ids[2]}, e.log.changes(), "one change per record, in the order given")
			assert.Equal(t, "v1", r.body["version"])
			assert.Equal(t, 3, e.countRows(t, "accounts"))

			t.Run("the list filters on external_id", func(t *testing.T) {
				r := e.do(t, http.MethodGet, accounts+"?filter=external_id:eq:ERP-3", token, "")
				require.Equal(t, http.StatusOK, r.status, r.raw)
				require.Len(t, r.list(), 1)
				assert.Equal(t, ids[2], r.list()[0].(map[string]any)["id"])
				r = e.do(t, http.MethodGet, accounts+"?filter=external_id:isnull:true", token, "")
				require.Len(t, r.list(), 1)
				assert.Equal(t, ids[1], r.list()[0].(map[string]any)["id"])
			})

			t.Run("all or nothing, every refused item named", func(t *testing.T) {
				before := e.log.changes()
				r := e.do(t, http.MethodPost, accounts, token, batch(
					account("Fine", ""),
					`{"company_name":"No type"}`,
					account("Fine too", "ERP-new"),
					`{"company_name":"Unknown","account_type":"customer","colour":"red"}`,
					`{"company_name":42,"account_type":"customer"}`,
					`[{"company_name":"nested"}]`,
					account("Taken", "ERP-1"),
					account("Repeat", "ERP-new"),
					`{"company_name":"Bad","account_type":"customer","external_id":"has space"}`,
					`{"company_name":"Org","account_type":"customer","organization_id":"`+orgB+`"}`,
				))
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, "invalid_batch", r.code())
				assert.Equal(t, map[int]string{
					1: "invalid_create", 3: "invalid_create", 4: "invalid_create", 5: "invalid_create",
					6: "conflict", 7: "conflict", 8: "invalid_create", 9: "invalid_create",
				}, refused(t, r))
				assert.Equal(t, 3, e.countRows(t, "accounts"), "nothing written")
				assert.Equal(t, before, e.log.changes(), "no change recorded")
			})

			t.Run("only conflicts is 409", func(t *testing.T) {
				r := e.do(t, http.MethodPost, accounts, token, batch(account("Fine", ""), account("Taken", "ERP-1"), account("Taken", "ERP-3")))
				require.Equal(t, http.StatusConflict, r.status, r.raw)
				assert.Equal(t, "conflict", r.code())
				assert.Equal(t, map[int]string{1: "conflict", 2: "conflict"}, refused(t, r))
				assert.Equal(t, 3, e.countRows(t, "accounts"))
			})

			t.Run("a single create that repeats an external_id is 409", func(t *testing.T) {
				r := e.do(t, http.MethodPost, accounts, token, account("Taken", "ERP-1"))
				require.Equal(t, http.StatusConflict, r.status, r.raw)
				assert.Equal(t, "conflict", r.code())
				assert.Contains(t, r.body["error_description"], "ERP-1")
				// Another branch has a scope of its own.
				r = e.do(t, http.MethodPost, "/v1/"+a2+"/accounts", token, account("Elsewhere", "ERP-1"))
				require.Equal(t, http.StatusCreated, r.status, r.raw)
				// A PATCH to a taken external_id is 409 too.
				r = e.do(t, http.MethodPatch, accounts+"/"+ids[1], token, `{"external_id":"ERP-1"}`)
				require.Equal(t, http.StatusConflict, r.status, r.raw)
				assert.Equal(t, 3, e.countRows(t, "accounts where branch_id = '"+a1+"'"))
			})

			t.Run("a constraint of the database names each item", func(t *testing.T) {
				acct := ids[0]
				q := func(date, until string) string {
					return fmt.Sprintf(`{"account_id":%q,"quotation_date":%q,"valid_until":%q}`, acct, date, until)
				}
				r := e.do(t, http.MethodPost, "/v1/"+a1+"/quotations", token, batch(
					q("2026-01-01", "2026-02-01"), q("2026-03-01", "2026-02-01"), q("2026-01-01", "2026-01-02"), q("2026-05-01", "2026-02-01"),
					fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-01-01","valid_until":"2026-02-01"}`, "0a000000-0000-4000-8000-0000000000ff"),
				))
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, map[int]string{1: "create_failed", 3: "create_failed", 4: "create_failed"}, refused(t, r))
				assert.Equal(t, 0, e.countRows(t, "quotations"))
			})

			t.Run("the rate limits count ceil(n/10)", func(t *testing.T) {
				e.mu.Lock()
				e.charged = nil
				e.mu.Unlock()
				for _, n := range []int{1, 10, 11, 25} {
					items := make([]string, n)
					for i := range items {
						items[i] = account(fmt.Sprintf("Cost %d.%d", n, i), "")
					}
					r := e.do(t, http.MethodPost, "/v1/"+a2+"/accounts", token, batch(items...))
					require.Equal(t, http.StatusCreated, r.status, r.raw)
				}
				e.mu.Lock()
				defer e.mu.Unlock()
				assert.Equal(t, []int{1, 2}, e.charged, "1 and 10 items cost the request alone; 11 one more, 25 two more")
			})
		})
	}
}

func TestBatchBounds(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newBatchEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"
			many := func(n int) []string {
				items := make([]string, n)
				for i := range items {
					items[i] = account(fmt.Sprintf("A%d", i), "")
				}
				return items
			}
			broken := many(1000)
			broken[900] = `{"company_name":"broken","account_type":`
			for _, tc := range []struct {
				name, body string
				status     int
				code       string
				items      map[int]string
			}{
				{"empty", `[]`, http.StatusBadRequest, "invalid_batch", map[int]string{}},
				{"over 1000", batch(many(1001)...), http.StatusBadRequest, "invalid_batch", map[int]string{}},
				{"objects without the array", strings.Join(broken[:3], ","), http.StatusBadRequest, "invalid_request", nil},
				{"broken JSON at item 900, in the array", "[" + strings.Join(broken, ",") + "]", http.StatusBadRequest, "invalid_batch", map[int]string{900: "invalid_request"}},
				{"an array of arrays", `[[{"company_name":"x","account_type":"customer"}],[]]`, http.StatusBadRequest, "invalid_batch", map[int]string{0: "invalid_create", 1: "invalid_create"}},
				{"an array of strings", `["a", 1, null, true]`, http.StatusBadRequest, "invalid_batch", map[int]string{0: "invalid_create", 1: "invalid_create", 2: "invalid_create", 3: "invalid_create"}},
				{"two arrays", batch(account("a", "")) + batch(account("b", "")), http.StatusBadRequest, "invalid_batch", map[int]string{}},
				{"over 10 MiB", "[" + strings.Repeat(" ", resource.MaxBatchBytes) + "]", http.StatusRequestEntityTooLarge, "payload_too_large", nil},
				{"one object over 1 MiB", `{"company_name":"x","account_type":"customer","comment":"` + strings.Repeat("x", resource.MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, "payload_too_large", nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := e.do(t, http.MethodPost, accounts, token, tc.body)
					require.Equal(t, tc.status, r.status, r.raw)
					assert.Equal(t, tc.code, r.code())
					if tc.items != nil {
						assert.Equal(t, tc.items, refused(t, r))
					}
					assert.Equal(t, 0, e.countRows(t, "accounts"), "nothing written")
				})
			}
			t.Run("1000 items", func(t *testing.T) {
				r := e.do(t, http.MethodPost, accounts, token, batch(many(1000)...))
				require.Equal(t, http.StatusCreated, r.status, r.raw)
				assert.Len(t, r.list(), 1000)
				assert.Equal(t, 1000, e.countRows(t, "accounts"))
				assert.Len(t, e.log.changes(), 1000)
			})
		})
	}
}

func TestUpsert(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newBatchEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"
			merge := map[string]string{"Prefer": "resolution=merge-duplicates"}
			upsert := func(t *testing.T, body string) response {
				t.Helper()
				return e.doWith(t, http.MethodPost, accounts, token, body, merge)
			}
			outcomes := func(r response) []any { o, _ := r.body["outcomes"].([]any); return o }

			r := upsert(t, batch(account("One", "ERP-1"), account("Two", "ERP-2")))
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, []any{"created", "created"}, outcomes(r))
			assert.Equal(t, "resolution=merge-duplicates", r.header.Get("Preference-Applied"))
			one := r.list()[0].(map[string]any)
			require.Len(t, e.log.changes(), 2)

			r = upsert(t, batch(
				`{"external_id":"ERP-1","company_name":"One renamed"}`,
				account("Two", "ERP-2"),
				account("Three", "ERP-3"),
			))
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, []any{"updated", "unchanged", "created"}, outcomes(r))
			renamed := r.list()[0].(map[string]any)
			assert.Equal(t, one["id"], renamed["id"])
			assert.Equal(t, "One renamed", renamed["company_name"])
			assert.Equal(t, "customer", renamed["account_type"], "a field not sent keeps its value")
			changes := e.log.changes()
			require.Len(t, changes, 4, "the unchanged item writes nothing and has no change")
			assert.Equal(t, "updated "+one["id"].(string), changes[2])
			assert.Equal(t, 3, e.countRows(t, "accounts"))

			t.Run("one object", func(t *testing.T) {
				r := upsert(t, account("Four", "ERP-4"))
				require.Equal(t, http.StatusOK, r.status, r.raw)
				assert.Equal(t, []any{"created"}, outcomes(r))
				r = upsert(t, account("Four", "ERP-4"))
				assert.Equal(t, []any{"unchanged"}, outcomes(r))
			})

			t.Run("refusals", func(t *testing.T) {
				r := upsert(t, batch(
					account("No key", ""),
					`{"external_id":"ERP-1","status":"deleted"}`,
					`{"external_id":"ERP-9","company_name":"Missing type"}`,
					account("Dup", "ERP-7"), account("Dup", "ERP-7"),
				))
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, map[int]string{0: "invalid_create", 1: "invalid_create", 2: "invalid_create", 4: "conflict"}, refused(t, r))
				assert.Equal(t, 4, e.countRows(t, "accounts"))
			})

			t.Run("a resource without external_id", func(t *testing.T) {
				r := e.doWith(t, http.MethodPost, "/v1/"+orgA+"/branches", token, `{}`, merge)
				assert.Equal(t, http.StatusMethodNotAllowed, r.status, r.raw)
			})

			t.Run("20 concurrent upserts of one new external_id", func(t *testing.T) {
				var wg sync.WaitGroup
				statuses := make([]int, 20)
				for i := range statuses {
					wg.Go(func() {
						r := e.doWith(t, http.MethodPost, accounts, token, account(fmt.Sprintf("Racer %d", i), "ERP-RACE"), merge)
						statuses[i] = r.status
						if r.status != http.StatusOK {
							t.Log(r.raw)
						}
					})
				}
				wg.Wait()
				for _, s := range statuses {
					assert.Equal(t, http.StatusOK, s)
				}
				assert.Equal(t, 1, e.countRows(t, "accounts where external_id = 'ERP-RACE'"))
			})
		})
	}
}

func TestBatchUpdate(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newBatchEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"
			r := e.do(t, http.MethodPost, accounts, token, batch(account("One", "ERP-1"), account("Two", "ERP-2"), account("Three", "")))
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			var ids []string
			for _, rec := range r.list() {
				ids = append(ids, rec.(map[string]any)["id"].(string))
			}
			other := e.mustCreate(t, token, "/v1/"+a2+"/accounts", account("Other branch", "ERP-X"))

			r = e.do(t, http.MethodPatch, accounts, token, batch(
				`{"id":"`+ids[2]+`","status":"inactive","external_id":"ERP-3"}`,
				`{"external_id":"ERP-1","comment":"by external id"}`,
			))
			require.Equal(t, http.StatusOK, r.status, r.raw)
			require.Len(t, r.list(), 2)
			assert.Equal(t, "inactive", r.list()[0].(map[string]any)["status"])
			assert.Equal(t, "ERP-3", r.list()[0].(map[string]any)["external_id"])
			assert.Equal(t, ids[0], r.list()[1].(map[string]any)["id"])
			assert.Equal(t, "by external id", r.list()[1].(map[string]any)["comment"])
			assert.Equal(t, []string{"updated " + ids[2], "updated " + ids[0]}, e.log.changes()[4:])

			t.Run("all or nothing", func(t *testing.T) {
				before := e.log.changes()
				r := e.do(t, http.MethodPatch, accounts, token, batch(
					`{"id":"`+ids[1]+`","comment":"would change"}`,
					`{"id":"0a000000-0000-4000-8000-0000000000ff","comment":"x"}`,
					`{"id":"`+other["id"].(string)+`","comment":"another branch's"}`,
					`{"external_id":"ERP-none","comment":"x"}`,
					`{"comment":"no key"}`,
					`{"id":"`+ids[1]+`","comment":"twice"}`,
					`{"id":"`+ids[0]+`","account_type":"alien"}`,
					`{"id":"`+ids[0]+`","external_id":"ERP-2"}`,
					`{"id":"not-a-uuid"}`,
				))
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, map[int]string{
					1: "not_found", 2: "not_found", 3: "not_found", 4: "invalid_update", 5: "invalid_update",
					6: "invalid_update", 7: "conflict", 8: "not_found",
				}, refused(t, r))
				assert.Equal(t, before, e.log.changes())
				got := e.do(t, http.MethodGet, accounts+"/"+ids[1], token, "")
				assert.Nil(t, got.data()["comment"], "nothing written")
			})

			t.Run("a single object is refused", func(t *testing.T) {
				r := e.do(t, http.MethodPatch, accounts, token, `{"id":"`+ids[0]+`","comment":"x"}`)
				require.Equal(t, http.StatusBadRequest, r.status, r.raw)
				assert.Equal(t, "invalid_batch", r.code())
			})
		})
	}
}

func TestBatchIdempotent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, e *env) {
		token := e.codeToken(t, orgA, allScopes...)
		key := map[string]string{"Idempotency-Key": "batch-1"}
		body := batch(account("One", ""), account("Two", ""))
		first := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, body, key)
		require.Equal(t, http.StatusCreated, first.status, first.raw)
		again := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, body, key)
		sameAnswer(t, first, again)
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
		assert.Equal(t, 2, e.countRows(t, "accounts"))
		other := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, batch(account("One", "")), key)
		assert.Equal(t, http.StatusUnprocessableEntity, other.status, other.raw)
	})
}
