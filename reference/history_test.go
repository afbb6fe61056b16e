package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/resource"
)

// historyPage is the answer of GET .../{id}/history.
type historyPage struct {
	Data       []map[string]any `json:"data"`
	NextCursor *string          `json:"next_cursor"`
	Version    string           `json:"version"`
}

// historyOf gets the history at url with token and decodes it.
func historyOf(t *testing.T, url, token string) (historyPage, swAnswer) {
	t.Helper()
	a := swDo(t, "GET", url, token, "", nil)
	var page historyPage
	if a.status == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(a.body), &page), a.body)
	}
	return page, a
}

// TestRecordHistory follows a quotation through the built server on both
// databases: created and changed by an app, moved to sent by a user through
// the app, deleted; its history has one entry for each write, oldest first,
// with exactly the old and new values of the fields each changed, the
// actor, and the id of the write's event in the change feed, also once the
// quotation is deleted. Pages, cursors, the /api/v1 alias, the read scope
// and the tenant rules of GET by id hold.
func TestRecordHistory(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "History Freight", "--database-url", dbURL)
			north := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
			south := createID(t, "admin", "branch", "create", "--org", org, "--name", "South", "--database-url", dbURL)
			email, password := "ops@history.test", "s3cret-pass"
			user := createID(t, "admin", "user", "create", "--email", email, "--password", password, "--org", org, "--admin", "--database-url", dbURL)
			scopes := "svc:events:read svc:accounts:read svc:accounts:write svc:quotations:read svc:quotations:write"
			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches", "--scopes", scopes,
				"--redirect-uri", rvRedirect, "--database-url", dbURL)
			writeOnly := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Writer", "--all-branches",
				"--scopes", "svc:quotations:write", "--database-url", dbURL)
			other := createID(t, "admin", "org", "create", "--name", "Elsewhere", "--database-url", dbURL)
			otherBranch := createID(t, "admin", "branch", "create", "--org", other, "--name", "Far", "--database-url", dbURL)
			otherApp := adminJSON(t, "admin", "app", "create", "--org", other, "--name", "Other", "--all-branches",
				"--scopes", "svc:quotations:read", "--database-url", dbURL)

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
			t.Cleanup(func() { require.NoError(t, stop()) })
			tenant := rvTenant{rlTenant: rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)}, email: email, password: password}
			token := rlToken(t, base, tenant.rlTenant)
			conf := &oauth2.Config{
				ClientID: tenant.clientID, ClientSecret: tenant.secret, RedirectURL: rvRedirect, Scopes: []string{"svc:quotations:read", "svc:quotations:write"},
				Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInHeader},
			}
			pkce := oauth2.GenerateVerifier()
			code := rvConsent(t, base, conf.AuthCodeURL("history-state", oauth2.S256ChallengeOption(pkce)), tenant)
			userTok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
			require.NoError(t, err)

			account := swDo(t, "POST", base+"/v1/"+north+"/accounts", token, `{"company_name": "Firm"}`, nil)
			require.Equal(t, http.StatusCreated, account.status, account.body)
			accountID := account.json(t)["data"].(map[string]any)["id"].(string)
			created := swDo(t, "POST", base+"/v1/"+north+"/quotations", token,
				`{"account_id": "`+accountID+`", "quotation_date": "2026-11-24", "valid_until": "2026-12-24", "total_packages": 3}`, nil)
			require.Equal(t, http.StatusCreated, created.status, created.body)
			q := created.json(t)["data"].(map[string]any)
			qid := q["id"].(string)
			item := base + "/v1/" + north + "/quotations/" + qid
			patched := swDo(t, "PATCH", item, token, `{"total_packages": 5, "total_weight_kg": 12.5, "valid_until": "2026-12-24"}`, nil)
			require.Equal(t, http.StatusOK, patched.status, patched.body)
			moved := swDo(t, "PATCH", item, userTok.AccessToken, `{"status": "sent"}`, nil)
			require.Equal(t, http.StatusOK, moved.status, moved.body)
			deleted := swDo(t, "DELETE", item, token, "", nil)
			require.Equal(t, http.StatusOK, deleted.status, deleted.body)

			page, a := historyOf(t, item+"/history", token)
			require.Equal(t, http.StatusOK, a.status, a.body)
			assert.Equal(t, "v1", page.Version)
			assert.Nil(t, page.NextCursor)
			assert.Empty(t, a.header.Get("Link"))
			require.Len(t, page.Data, 4, a.body)
			clientID := app["client_id"].(string)
			number := q["quotation_number"]
			want := []map[string]any{
				{"type": "quotation.created", "clientid": clientID, "userid": nil,
					"changed": []any{"quotation_number", "account_id", "quotation_date", "valid_until", "status", "total_weight_kg", "total_volume_m3", "total_packages"},
					"before":  map[string]any{},
					"after": map[string]any{"quotation_number": number, "account_id": accountID, "quotation_date": "2026-11-24", "valid_until": "2026-12-24",
						"status": "draft", "total_weight_kg": 0.0, "total_volume_m3": 0.0, "total_packages": 3.0}},
				{"type": "quotation.updated", "clientid": clientID, "userid": nil,
					"changed": []any{"total_weight_kg", "total_packages"},
					"before":  map[string]any{"total_weight_kg": 0.0, "total_packages": 3.0},
					"after":   map[string]any{"total_weight_kg": 12.5, "total_packages": 5.0}},
				{"type": "quotation.updated", "clientid": clientID, "userid": user,
					"changed": []any{"status"},
					"before":  map[string]any{"status": "draft"},
					"after":   map[string]any{"status": "sent"}},
				{"type": "quotation.deleted", "clientid": clientID, "userid": nil,
					"changed": []any{"external_id", "quotation_number", "account_id", "quotation_date", "valid_until", "status", "total_weight_kg", "total_volume_m3", "total_packages"},
					"before": map[string]any{"quotation_number": number, "account_id": accountID, "quotation_date": "2026-11-24", "valid_until": "2026-12-24",
						"status": "sent", "total_weight_kg": 12.5, "total_volume_m3": 0.0, "total_packages": 5.0, "external_id": nil},
					"after": map[string]any{}},
			}
			times := []any{q["updated_at"], patched.json(t)["data"].(map[string]any)["updated_at"], moved.json(t)["data"].(map[string]any)["updated_at"]}
			for i, e := range page.Data {
				got := map[string]any{}
				for k, v := range e {
					if k != "id" && k != "time" {
						got[k] = v
					}
				}
				assert.Equal(t, want[i], got, "entry %d", i)
				if i < len(times) {
					assert.Equal(t, times[i], e["time"], "entry %d is at the record's updated_at", i)
				}
			}

			// The entries' ids are the events' of the same writes.
			feed := swDo(t, "GET", base+"/v1/"+north+"/events?types=quotation.*", token, "", nil)
			require.Equal(t, http.StatusOK, feed.status, feed.body)
			var events []string
			for _, ev := range feed.json(t)["data"].([]any) {
				if ev := ev.(map[string]any); ev["type"] != "quotation.status_changed" {
					events = append(events, ev["id"].(string))
				}
			}
			var ids []string
			for _, e := range page.Data {
				ids = append(ids, e["id"].(string))
			}
			assert.Equal(t, events, ids)

			// Pages of two, through the alias.
			first, a := historyOf(t, base+"/api/v1/"+north+"/quotations/"+qid+"/history?limit=2", token)
			require.Equal(t, http.StatusOK, a.status, a.body)
			require.Len(t, first.Data, 2)
			require.NotNil(t, first.NextCursor)
			assert.Equal(t, ids[:2], []string{first.Data[0]["id"].(string), first.Data[1]["id"].(string)})
			link := a.header.Get("Link")
			assert.Equal(t, "</api/v1/"+north+"/quotations/"+qid+"/history?"+url.Values{"after": {*first.NextCursor}, "limit": {"2"}}.Encode()+`>; rel="next"`, link)
			second, a := historyOf(t, base+"/v1/"+north+"/quotations/"+qid+"/history?limit=2&after="+url.QueryEscape(*first.NextCursor), token)
			require.Equal(t, http.StatusOK, a.status, a.body)
			require.Len(t, second.Data, 2)
			assert.Equal(t, ids[2:], []string{second.Data[0]["id"].(string), second.Data[1]["id"].(string)})
			assert.Nil(t, second.NextCursor, "the page that ends the history has no cursor, even when it is full")

			// The account's history: the record exists, one entry.
			accountHistory, a := historyOf(t, base+"/v1/"+north+"/accounts/"+accountID+"/history", token)
			require.Equal(t, http.StatusOK, a.status, a.body)
			require.Len(t, accountHistory.Data, 1)
			assert.Equal(t, "account.created", accountHistory.Data[0]["type"])

			// Batch writes: a batch create, a batch update and an upsert
			// give one entry per record written, and none to a record an
			// upsert leaves unchanged.
			accounts := base + "/v1/" + north + "/accounts"
			batch := swDo(t, "POST", accounts, token, `[{"company_name":"A","external_id":"ERP-A"},{"company_name":"B","external_id":"ERP-B"}]`, nil)
			require.Equal(t, http.StatusCreated, batch.status, batch.body)
			ids = batchIDs(t, batch.body)
			require.Len(t, ids, 2)
			update := swDo(t, "PATCH", accounts, token, `[{"id":"`+ids[0]+`","comment":"first"},{"id":"`+ids[1]+`","status":"inactive"}]`, nil)
			require.Equal(t, http.StatusOK, update.status, update.body)
			upsert := swDo(t, "POST", accounts, token, `[{"external_id":"ERP-A","company_name":"A2"},{"external_id":"ERP-B","company_name":"B"}]`,
				map[string]string{"Prefer": "resolution=merge-duplicates"})
			require.Equal(t, http.StatusOK, upsert.status, upsert.body)
			wantBatch := map[string][][3]any{
				ids[0]: {
					{"account.created", nil, map[string]any{"company_name": "A", "external_id": "ERP-A", "account_type": "customer", "status": "active"}},
					{"account.updated", map[string]any{"comment": nil}, map[string]any{"comment": "first"}},
					{"account.updated", map[string]any{"company_name": "A"}, map[string]any{"company_name": "A2"}},
				},
				ids[1]: {
					{"account.created", nil, map[string]any{"company_name": "B", "external_id": "ERP-B", "account_type": "customer", "status": "active"}},
					{"account.updated", map[string]any{"status": "active"}, map[string]any{"status": "inactive"}},
				},
			}
			for id, want := range wantBatch {
				page, a := historyOf(t, accounts+"/"+id+"/history", token)
				require.Equal(t, http.StatusOK, a.status, a.body)
				require.Len(t, page.Data, len(want), a.body)
				for i, w := range want {
					e := page.Data[i]
					assert.Equal(t, w[0], e["type"], "%s entry %d", id, i)
					before, _ := w[1].(map[string]any)
					if before == nil {
						before = map[string]any{}
					}
					assert.Equal(t, before, e["before"], "%s entry %d", id, i)
					for k, v := range w[2].(map[string]any) {
						assert.Equal(t, v, e["after"].(map[string]any)[k], "%s entry %d: %s", id, i, k)
					}
				}
			}

			tampered := []byte(*first.NextCursor)
			tampered[3] ^= 1
			otherToken := rlToken(t, base, rlTenant{org: other, clientID: otherApp["client_id"].(string), secret: otherApp["client_secret"].(string)})
			writeToken := rlToken(t, base, rlTenant{org: org, clientID: writeOnly["client_id"].(string), secret: writeOnly["client_secret"].(string)})
			refused := []struct {
				name, url, token string
				status           int
				code             string
			}{
				{"another branch", base + "/v1/" + south + "/quotations/" + qid + "/history", token, http.StatusNotFound, "not_found"},
				{"another organization", base + "/v1/" + otherBranch + "/quotations/" + qid + "/history", otherToken, http.StatusNotFound, "not_found"},
				{"no such record", base + "/v1/" + north + "/quotations/" + uuid.NewString() + "/history", token, http.StatusNotFound, "not_found"},
				{"not an id", base + "/v1/" + north + "/quotations/nope/history", token, http.StatusNotFound, "not_found"},
				{"a record of another resource", base + "/v1/" + north + "/quotations/" + accountID + "/history", token, http.StatusNotFound, "not_found"},
				{"no read scope", item + "/history", writeToken, http.StatusForbidden, "insufficient_scope"},
				{"tampered cursor", item + "/history?after=" + string(tampered), token, http.StatusBadRequest, "invalid_request"},
				{"cursor of another record", base + "/v1/" + north + "/accounts/" + accountID + "/history?after=" + *first.NextCursor, token, http.StatusBadRequest, "invalid_request"},
				{"not a cursor", item + "/history?after=2", token, http.StatusBadRequest, "invalid_request"},
				{"limit zero", item + "/history?limit=0", token, http.StatusBadRequest, "invalid_request"},
				{"limit too large", item + "/history?limit=1001", token, http.StatusBadRequest, "invalid_request"},
				{"limit not a number", item + "/history?limit=ten", token, http.StatusBadRequest, "invalid_request"},
				{"limit twice", item + "/history?limit=1&limit=2", token, http.StatusBadRequest, "invalid_request"},
				{"unknown parameter", item + "/history?offset=1", token, http.StatusBadRequest, "invalid_request"},
				{"bad escape", item + "/history?limit=%zz", token, http.StatusBadRequest, "invalid_request"},
			}
			for _, tt := range refused {
				t.Run(tt.name, func(t *testing.T) {
					a := swDo(t, "GET", tt.url, tt.token, "", nil)
					require.Equal(t, tt.status, a.status, a.body)
					assert.Equal(t, tt.code, a.json(t)["error"], a.body)
				})
			}
			post := swDo(t, "POST", item+"/history", token, `{}`, nil)
			assert.Equal(t, http.StatusMethodNotAllowed, post.status, post.body)
			assert.Equal(t, "GET, HEAD", post.header.Get("Allow"))
		})
	}
}

// TestRecordHistoryRetention: the purge removes the entries of the
// records' history older than --audit-retention, and none for
// --event-retention, which purges the change feed alone.
func TestRecordHistoryRetention(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Retention Freight", "--database-url", dbURL)
			branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
				"--scopes", "svc:accounts:read svc:accounts:write", "--database-url", dbURL)
			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--purge-interval", "0"}, env(nil))
			token := rlToken(t, base, rlTenant{org: org, clientID: app["client_id"].(string), secret: app["client_secret"].(string)})
			var ids []string
			for _, name := range []string{"Old", "New"} {
				a := swDo(t, "POST", base+"/v1/"+branch+"/accounts", token, `{"company_name":"`+name+`"}`, nil)
				require.Equal(t, http.StatusCreated, a.status, a.body)
				ids = append(ids, a.json(t)["data"].(map[string]any)["id"].(string))
			}
			require.NoError(t, stop())

			// The feed's retention purges events, never history.
			purged := adminJSON(t, "admin", "purge", "--event-retention", "1ms", "--database-url", dbURL)
			assert.EqualValues(t, 2, purged["events"])
			assert.EqualValues(t, 0, purged["history_entries"])

			// An entry older than the audit retention goes, the other stays.
			db, dialect, err := openDB(t.Context(), dbURL, 1)
			require.NoError(t, err)
			defer db.Close()
			old := dialect.Timestamp(time.Now().Add(-defaultAuditRetention - time.Hour))
			text, args, err := sqlbuild.SQL(dialect, sq.Update(resource.HistoryTable).Set("time", old).Where("record_id = ?", ids[0]))
			require.NoError(t, err)
			_, err = db.ExecContext(t.Context(), text, args...)
			require.NoError(t, err)
			purged = adminJSON(t, "admin", "purge", "--database-url", dbURL)
			assert.EqualValues(t, 1, purged["history_entries"])
			purged = adminJSON(t, "admin", "purge", "--audit-retention", "1ms", "--database-url", dbURL)
			assert.EqualValues(t, 1, purged["history_entries"])
		})
	}
}
