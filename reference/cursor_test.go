package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCursorWalkWhileWriting: a client pages through 10,000 accounts by
// cursor, following Link, while another client creates accounts and
// deletes some of the old ones. Every account that existed throughout the
// walk comes back exactly once, and no account twice.
func TestCursorWalkWhileWriting(t *testing.T) {
	t.Parallel()
	const n = 10_000
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := newSyncWorld(t, b.url(t), "0")
			dbURL, base, org, branch, token := w.dbURL, w.base, w.org, w.branch, w.token

			// n accounts, created_at in runs of seven equal values, so that
			// the tiebreaker decides within each run.
			db, d, err := openDB(t.Context(), dbURL, 1)
			require.NoError(t, err)
			defer db.Close()
			tx, err := db.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			stmt, err := tx.PrepareContext(t.Context(), "INSERT INTO accounts (id, organization_id, branch_id, created_at, updated_at, company_name) VALUES ($1, $2, $3, $4, $4, $5)")
			require.NoError(t, err)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			ids := make([]string, n)
			for i := range n {
				ids[i] = newID()
				_, err := stmt.ExecContext(t.Context(), ids[i], org, branch, d.Timestamp(start.Add(time.Duration(i/7)*time.Second)), fmt.Sprintf("Firm %05d", i%3000))
				require.NoError(t, err)
			}
			require.NoError(t, stmt.Close())
			require.NoError(t, tx.Commit())

			var deleted sync.Map // the accounts of ids deleted so far
			for _, order := range []string{"", "company_name:asc", "created_at:asc"} {
				t.Run("sort="+order, func(t *testing.T) {
					ctx, cancel := context.WithCancel(t.Context())
					var wg sync.WaitGroup
					wg.Go(func() {
						for i := 0; ctx.Err() == nil; i++ {
							created := swDo(t, http.MethodPost, base+"/v1/"+branch+"/accounts", token, `{"company_name":"Firm 01500","account_type":"carrier"}`, nil)
							if created.status != http.StatusCreated {
								t.Errorf("create: %d %s", created.status, created.body)
								return
							}
							victim := ids[(i*7919)%n]
							if _, gone := deleted.Load(victim); !gone {
								r := swDo(t, http.MethodDelete, base+"/v1/"+branch+"/accounts/"+victim, token, "", nil)
								if r.status == http.StatusOK {
									deleted.Store(victim, true)
								}
							}
						}
					})
					seen := map[string]int{}
					next := "/v1/" + branch + "/accounts?limit=250"
					if order != "" {
						next += "&sort=" + order
					}
					pages := 0
					for next != "" {
						r := swDo(t, http.MethodGet, base+next, token, "", map[string]string{"Prefer": "count=none"})
						require.Equal(t, http.StatusOK, r.status, r.body)
						var page struct {
							Data []struct {
								ID string `json:"id"`
							} `json:"data"`
							Pagination struct {
								NextCursor *string `json:"next_cursor"`
							} `json:"pagination"`
						}
						require.NoError(t, json.Unmarshal([]byte(r.body), &page))
						for _, rec := range page.Data {
							seen[rec.ID]++
						}
						next = ""
						if link := r.header.Get("Link"); link != "" {
							require.NotNil(t, page.Pagination.NextCursor)
							target, rel, ok := strings.Cut(link, ">; ")
							require.True(t, ok, link)
							require.Equal(t, `rel="next"`, rel)
							next = strings.TrimPrefix(target, "<")
							assert.Contains(t, next, "after="+strings.ReplaceAll(*page.Pagination.NextCursor, "=", "%3D"))
						} else {
							assert.Nil(t, page.Pagination.NextCursor, "no Link, no cursor")
						}
						pages++
					}
					cancel()
					wg.Wait()
					for id, c := range seen {
						require.Equal(t, 1, c, "%s came %d times", id, c)
					}
					missing := 0
					for _, id := range ids {
						if _, gone := deleted.Load(id); !gone && seen[id] == 0 {
							missing++
						}
					}
					assert.Zero(t, missing, "accounts that existed throughout and were not seen")
					assert.GreaterOrEqual(t, pages, n/250/2)
				})
			}

			t.Run("refused cursors", func(t *testing.T) {
				r := swDo(t, http.MethodGet, base+"/v1/"+branch+"/accounts?limit=2&sort=company_name:asc", token, "", nil)
				require.Equal(t, http.StatusOK, r.status, r.body)
				var page struct {
					Pagination struct {
						NextCursor string `json:"next_cursor"`
					} `json:"pagination"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.body), &page))
				cursor := page.Pagination.NextCursor
				require.NotEmpty(t, cursor)
				flip := []byte(cursor)
				flip[len(flip)/2] ^= 1
				for name, q := range map[string]string{
					"tampered":       "sort=company_name:asc&after=" + string(flip),
					"another sort":   "sort=company_name:desc&after=" + cursor,
					"another filter": "sort=company_name:asc&filter=status:eq:active&after=" + cursor,
					"with offset":    "sort=company_name:asc&offset=2&after=" + cursor,
				} {
					r := swDo(t, http.MethodGet, base+"/v1/"+branch+"/accounts?"+q, token, "", nil)
					assert.Equal(t, http.StatusBadRequest, r.status, name)
					assert.Contains(t, r.body, `"error":"invalid_request"`, name)
				}
				r = swDo(t, http.MethodGet, base+"/v1/"+branch+"/projects?sort=created_at:desc&after="+cursor, token, "", nil)
				assert.NotEqual(t, http.StatusOK, r.status, "another resource's list")
			})
		})
	}
}
