package resource_test

import (
	"net/http"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/resource"
)

var strongTag = regexp.MustCompile(`^"[A-Za-z0-9_-]{22}"$`)

func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, b, func(_ *resource.Registry, rs []*resource.Resource) {
				for _, r := range rs {
					if r.Name == "zones" {
						r.RequireIfMatch = true
					}
				}
			})
			token := e.codeToken(t, orgA, allScopes...)
			accounts := "/v1/" + a1 + "/accounts"

			created := e.doWith(t, http.MethodPost, accounts, token, `{"company_name":"Acme","account_type":"customer"}`, nil)
			require.Equal(t, http.StatusCreated, created.status, created.raw)
			tag0 := created.header.Get("ETag")
			assert.Regexp(t, strongTag, tag0, "a strong tag")
			item := accounts + "/" + created.data()["id"].(string)

			t.Run("GET carries the tag of POST", func(t *testing.T) {
				r := e.doWith(t, http.MethodGet, item, token, "", nil)
				assert.Equal(t, tag0, r.header.Get("ETag"))
			})
			t.Run("If-None-Match", func(t *testing.T) {
				for _, tc := range []struct {
					header string
					want   int
				}{
					{tag0, http.StatusNotModified},
					{"W/" + tag0, http.StatusNotModified},
					{`"other", ` + tag0, http.StatusNotModified},
					{"*", http.StatusNotModified},
					{`"other"`, http.StatusOK},
				} {
					r := e.doWith(t, http.MethodGet, item, token, "", map[string]string{"If-None-Match": tc.header})
					assert.Equal(t, tc.want, r.status, tc.header)
					assert.Equal(t, tag0, r.header.Get("ETag"), tc.header)
					if tc.want == http.StatusNotModified {
						assert.Empty(t, r.raw, "304 has no body")
					}
				}
			})

			t.Run("stale If-Match changes nothing and shows the record", func(t *testing.T) {
				r := e.doWith(t, http.MethodPatch, item, token, `{"comment":"first"}`, map[string]string{"If-Match": tag0})
				require.Equal(t, http.StatusOK, r.status, r.raw)
				tag1 := r.header.Get("ETag")
				assert.Regexp(t, strongTag, tag1)
				assert.NotEqual(t, tag0, tag1, "every write gives a new tag")

				for _, stale := range []string{tag0, "W/" + tag1, `"nonsense"`} {
					r = e.doWith(t, http.MethodPatch, item, token, `{"comment":"lost"}`, map[string]string{"If-Match": stale})
					assert.Equal(t, http.StatusPreconditionFailed, r.status, stale)
					assert.Equal(t, "precondition_failed", r.code())
					assert.Equal(t, "first", r.data()["comment"], "412 shows the record as stored")
					assert.Equal(t, tag1, r.header.Get("ETag"))
				}
				r = e.doWith(t, http.MethodDelete, item, token, "", map[string]string{"If-Match": tag0})
				assert.Equal(t, http.StatusPreconditionFailed, r.status)
				got := e.doWith(t, http.MethodGet, item, token, "", nil)
				assert.Equal(t, http.StatusOK, got.status, "the record is still there")
				assert.Equal(t, "first", got.data()["comment"])
				assert.Equal(t, tag1, got.header.Get("ETag"))

				r = e.doWith(t, http.MethodPatch, item, token, `{"comment":"second"}`, map[string]string{"If-Match": "*"})
				assert.Equal(t, http.StatusOK, r.status, "* matches any stored record")
			})

			t.Run("an unknown id stays 404", func(t *testing.T) {
				r := e.doWith(t, http.MethodPatch, accounts+"/0a000000-0000-4000-8000-0000000000ff", token, `{"comment":"x"}`, map[string]string{"If-Match": tag0})
				assert.Equal(t, http.StatusNotFound, r.status)
			})

			t.Run("a resource that requires If-Match", func(t *testing.T) {
				zone := e.doWith(t, http.MethodPost, "/v1/"+a1+"/zones", token, `{"name":"North"}`, nil)
				require.Equal(t, http.StatusCreated, zone.status, zone.raw)
				path := "/v1/" + a1 + "/zones/" + zone.data()["id"].(string)
				for _, m := range []string{http.MethodPatch, http.MethodDelete} {
					r := e.doWith(t, m, path, token, `{"name":"South"}`, nil)
					assert.Equal(t, http.StatusPreconditionRequired, r.status, m)
					assert.Equal(t, "precondition_required", r.code())
					assert.Contains(t, r.body["error_description"], "If-Match")
				}
				r := e.doWith(t, http.MethodPatch, path, token, `{"name":"South"}`, map[string]string{"If-Match": zone.header.Get("ETag")})
				assert.Equal(t, http.StatusOK, r.status, r.raw)
				r = e.doWith(t, http.MethodDelete, path, token, "", map[string]string{"If-Match": r.header.Get("ETag")})
				assert.Equal(t, http.StatusOK, r.status, r.raw)
				assert.Regexp(t, strongTag, r.header.Get("ETag"), "DELETE answers with the deleted record and its tag")
			})
		})
	}
}

// TestIfMatchRace: writers that all read the same version and write with
// its tag at once: exactly one wins, every other gets 412.
func TestIfMatchRace(t *testing.T) {
	t.Parallel()
	const rounds, writers = 15, 8
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b)
			token := e.codeToken(t, orgA, allScopes...)
			created := e.doWith(t, http.MethodPost, "/v1/"+a1+"/accounts", token, `{"company_name":"Acme","account_type":"customer"}`, nil)
			require.Equal(t, http.StatusCreated, created.status, created.raw)
			item := "/v1/" + a1 + "/accounts/" + created.data()["id"].(string)
			tag := created.header.Get("ETag")
			for round := range rounds {
				statuses := make([]int, writers)
				tags := make([]string, writers)
				var wg sync.WaitGroup
				for i := range writers {
					wg.Go(func() {
						r := e.doWith(t, http.MethodPatch, item, token, `{"comment":"writer `+string(rune('a'+i))+`"}`, map[string]string{"If-Match": tag})
						statuses[i], tags[i] = r.status, r.header.Get("ETag")
					})
				}
				wg.Wait()
				won := 0
				for i, s := range statuses {
					switch s {
					case http.StatusOK:
						won++
						tag = tags[i]
					case http.StatusPreconditionFailed:
					default:
						t.Fatalf("round %d: writer %d got %d", round, i, s)
					}
				}
				require.Equal(t, 1, won, "round %d: %v", round, statuses)
				got := e.doWith(t, http.MethodGet, item, token, "", nil)
				require.Equal(t, tag, got.header.Get("ETag"), "round %d: the winner's tag is the stored one", round)
			}
		})
	}
}
