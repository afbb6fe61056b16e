package webhook_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/tenancy"
	"github.com/waybillhq/waybill/webhook"
	"github.com/waybillhq/waybill/webhook/signature"
)

func TestCreateShowsTheSecretOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		e.setHead(t, orgA, 7)
		tok := e.codeToken(t, orgA, read, write, "svc:quotations:read", "svc:vehicles:read")
		r := e.do(t, http.MethodPost, endpoints(orgA), tok,
			body(map[string]any{"url": publicURL, "event_types": []string{"quotation.created", "quotation.*", "quotation.created"}}))
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		ep := r.data()
		id := ep["id"].(string)
		assert.Equal(t, endpoints(orgA)+"/"+id, r.header.Get("Location"))
		assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
		assert.Equal(t, "v1", r.body["version"])
		assert.Equal(t, publicURL, ep["url"])
		assert.Equal(t, []any{"quotation.created", "quotation.*"}, ep["event_types"], "duplicates dropped")
		assert.Nil(t, ep["branch_ids"])
		assert.Contains(t, ep, "branch_ids")
		assert.Equal(t, "enabled", ep["status"])
		assert.Contains(t, ep, "disabled_reason")
		assert.Nil(t, ep["disabled_reason"])
		assert.Equal(t, ep["created_at"], ep["updated_at"])
		secret, _ := ep["secret"].(string)
		require.True(t, strings.HasPrefix(secret, signature.SecretPrefix), secret)
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, signature.SecretPrefix))
		require.NoError(t, err)
		assert.Len(t, key, 32)
		assert.Equal(t, byte('7'), id[14], "a UUIDv7")

		// The secret is never shown again.
		for _, r := range []response{
			e.do(t, http.MethodGet, endpoints(orgA)+"/"+id, tok, ""),
			e.do(t, http.MethodPatch, endpoints(orgA)+"/"+id, tok, `{"url":"https://1.0.0.1/x"}`),
			e.do(t, http.MethodGet, endpoints(orgA), tok, ""),
		} {
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.NotContains(t, r.raw, secret)
			assert.NotContains(t, r.raw, `"secret"`)
		}

		// Without a Sealer it is stored in clear; the grant is what the
		// token reads (webhook_endpoints: svc:webhooks:read reads the events
		// of endpoints), the start the organization's head.
		got := e.row(t, id)
		assert.Equal(t, secret, string(got.secret))
		assert.Equal(t, "", got.keyID)
		assert.JSONEq(t, `["quotation.created","quotation.*"]`, got.eventTypes)
		assert.False(t, got.branchIDs.Valid)
		assert.JSONEq(t, `["quotations","vehicles","webhook_endpoints"]`, got.grantResources)
		assert.False(t, got.grantBranches.Valid, "an authorization-code token sees every branch")
		assert.Equal(t, int64(7), got.afterSeq)
	})
}

func TestSecretSealedAtRest(t *testing.T) {
	t.Parallel()
	key, err := oauth.ParseSecretsKey(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
	require.NoError(t, err)
	sealer, err := oauth.NewSealer(key)
	require.NoError(t, err)
	eachBackend(t, func(a *webhook.API) { a.Sealer = sealer }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, read, write, "svc:quotations:read")
		ep := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))
		secret, id := ep["secret"].(string), ep["id"].(string)
		got := e.row(t, id)
		assert.Equal(t, key.ID(), got.keyID)
		assert.NotContains(t, string(got.secret), secret)
		assert.NotContains(t, string(got.secret), strings.TrimPrefix(secret, signature.SecretPrefix))
		opened, err := sealer.Open(got.secret, []byte(id), got.keyID)
		require.NoError(t, err)
		assert.Equal(t, secret, string(opened))
		_, err = sealer.Open(got.secret, []byte("another endpoint"), got.keyID)
		assert.Error(t, err, "the sealed secret is bound to its endpoint")
	})
}

func TestUpdateListDelete(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		first := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"quotation.created"}}))
		second := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}, "branch_ids": []string{a1}}))
		id := first["id"].(string)
		item := endpoints(orgA) + "/" + id

		r := e.do(t, http.MethodGet, endpoints(orgA), tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Len(t, r.list(), 2)
		assert.Equal(t, id, r.list()[0].(map[string]any)["id"], "oldest first")
		assert.Equal(t, []any{a1}, r.list()[1].(map[string]any)["branch_ids"])
		assert.Equal(t, map[string]any{"limit": 100.0, "offset": 0.0, "total": 2.0, "next_cursor": nil}, r.body["pagination"])
		r = e.do(t, http.MethodGet, endpoints(orgA)+"?limit=1&offset=1", tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.Len(t, r.list(), 1)
		assert.Equal(t, second["id"], r.list()[0].(map[string]any)["id"])
		for _, q := range []string{"limit=0", "limit=101", "limit=x", "offset=-1", "sort=url", "limit=1&limit=2"} {
			r := e.do(t, http.MethodGet, endpoints(orgA)+"?"+q, tok, "")
			assert.Equal(t, http.StatusBadRequest, r.status, q)
			assert.Equal(t, "invalid_request", r.code(), q)
		}

		steps := []struct {
			name, body string
			check      func(t *testing.T, ep map[string]any, row row)
		}{
			{"url", `{"url":"https://1.0.0.1/new"}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, "https://1.0.0.1/new", ep["url"])
				assert.Equal(t, []any{"quotation.created"}, ep["event_types"])
			}},
			{"event types", `{"event_types":["account.*","vehicle.deleted"]}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, []any{"account.*", "vehicle.deleted"}, ep["event_types"])
				assert.JSONEq(t, `["account.*","vehicle.deleted"]`, row.eventTypes)
			}},
			{"branches", `{"branch_ids":["` + strings.ToUpper(a2) + `","` + a1 + `"]}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, []any{a2, a1}, ep["branch_ids"], "canonical, lower case")
				assert.JSONEq(t, `["`+a2+`","`+a1+`"]`, row.branchIDs.String)
			}},
			{"every branch", `{"branch_ids":null}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Nil(t, ep["branch_ids"])
				assert.False(t, row.branchIDs.Valid)
			}},
			{"disable", `{"status":"disabled"}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, "disabled", ep["status"])
				assert.Equal(t, "disabled through the API", ep["disabled_reason"])
				assert.Equal(t, "disabled", row.status)
			}},
			{"enable", `{"status":"enabled"}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, "enabled", ep["status"])
				assert.Nil(t, ep["disabled_reason"])
				assert.Equal(t, "", row.reason)
			}},
			{"nothing", `{}`, func(t *testing.T, ep map[string]any, row row) {
				assert.Equal(t, "enabled", ep["status"])
			}},
		}
		for _, s := range steps {
			r := e.do(t, http.MethodPatch, item, tok, s.body)
			require.Equal(t, http.StatusOK, r.status, "%s: %s", s.name, r.raw)
			got := e.do(t, http.MethodGet, item, tok, "")
			require.Equal(t, http.StatusOK, got.status, got.raw)
			assert.Equal(t, r.data(), got.data(), s.name)
			s.check(t, got.data(), e.row(t, id))
		}

		// A disabled reason the dispatcher set shows, and enabling clears it.
		_, err := e.db.Exec("UPDATE waybill_webhook_endpoints SET status = 'disabled', disabled_reason = 'failing since 2026-11-20' WHERE id = $1", id)
		require.NoError(t, err)
		assert.Equal(t, "failing since 2026-11-20", e.do(t, http.MethodGet, item, tok, "").data()["disabled_reason"])
		r = e.do(t, http.MethodPatch, item, tok, `{"status":"disabled"}`)
		assert.Equal(t, "failing since 2026-11-20", r.data()["disabled_reason"], "disabling again keeps the reason")
		r = e.do(t, http.MethodPatch, item, tok, `{"status":"enabled"}`)
		assert.Nil(t, r.data()["disabled_reason"])
		assert.Equal(t, "", e.row(t, id).reason)

		r = e.do(t, http.MethodDelete, item, tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, id, r.data()["id"])
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodGet, item, tok, "").status)
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodDelete, item, tok, "").status)
		assert.Len(t, e.do(t, http.MethodGet, endpoints(orgA), tok, "").list(), 1)
	})
}

func TestOtherOrganizations(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tokA, tokB := e.codeToken(t, orgA, readAll...), e.codeToken(t, orgB, readAll...)
		id := e.create(t, tokA, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		cases := []struct{ method, path, body string }{
			{http.MethodGet, endpoints(orgB) + "/" + id, ""},
			{http.MethodPatch, endpoints(orgB) + "/" + id, `{"status":"disabled"}`},
			{http.MethodDelete, endpoints(orgB) + "/" + id, ""},
			{http.MethodGet, endpoints(orgB) + "/" + id + "/deliveries", ""},
			{http.MethodPost, endpoints(orgB) + "/" + id + "/deliveries/" + id + "/redeliver", ""},
			{http.MethodGet, endpoints(orgA) + "/" + id, ""}, // B's token, A's path
			{http.MethodGet, endpoints(orgA), ""},
			{http.MethodGet, endpoints(orgB) + "/not-a-uuid", ""},
			{http.MethodGet, "/v1/not-a-uuid/webhook_endpoints", ""},
		}
		for _, c := range cases {
			r := e.do(t, c.method, c.path, tokB, c.body)
			assert.Equal(t, http.StatusNotFound, r.status, "%s %s: %s", c.method, c.path, r.raw)
			assert.Equal(t, "not_found", r.code())
		}
		r := e.do(t, http.MethodGet, endpoints(orgB), tokB, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Empty(t, r.list())
		assert.Equal(t, "enabled", e.do(t, http.MethodGet, endpoints(orgA)+"/"+id, tokA, "").data()["status"], "B's PATCH changed nothing")
		// The alias prefix serves the same endpoints.
		assert.Equal(t, id, e.do(t, http.MethodGet, "/api/v1/"+orgA+"/webhook_endpoints/"+strings.ToUpper(id), tokA, "").data()["id"])
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		all := e.codeToken(t, orgA, readAll...)
		id := e.create(t, all, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		item := endpoints(orgA) + "/" + id
		cases := []struct {
			name         string
			scopes       []string
			method, path string
			body         string
			status       int
			code, scope  string // scope: named in the challenge
		}{
			{"list without read", []string{write}, http.MethodGet, endpoints(orgA), "", 403, "insufficient_scope", read},
			{"get without read", []string{write}, http.MethodGet, item, "", 403, "insufficient_scope", read},
			{"deliveries without read", []string{write}, http.MethodGet, item + "/deliveries", "", 403, "insufficient_scope", read},
			{"create without write", []string{read, "svc:quotations:read"}, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["*"]}`, 403, "insufficient_scope", write},
			{"patch without write", []string{read}, http.MethodPatch, item, `{}`, 403, "insufficient_scope", write},
			{"delete without write", []string{read}, http.MethodDelete, item, "", 403, "insufficient_scope", write},
			{"redeliver without write", []string{read}, http.MethodPost, item + "/deliveries/" + id + "/redeliver", "", 403, "insufficient_scope", write},
			{"a type it cannot read", []string{read, write, "svc:accounts:read"}, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["account.created","quotation.created"]}`, 403, "insufficient_scope", "svc:quotations:read"},
			{"a resource it cannot read", []string{read, write, "svc:accounts:read"}, http.MethodPatch, item,
				`{"event_types":["vehicle.*"]}`, 403, "insufficient_scope", "svc:vehicles:read"},
			{"every type, nothing readable", []string{read, write, "svc:quotations:write"}, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["*"]}`, 403, "insufficient_scope", ""},
			{"an unknown type", readAll, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["invoice.created"]}`, 400, "invalid_create", ""},
			{"an unknown change", readAll, http.MethodPatch, item, `{"event_types":["quotation.archived"]}`, 400, "invalid_update", ""},
			{"a bare resource", readAll, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["quotations"]}`, 400, "invalid_create", ""},
			{"no type", readAll, http.MethodPost, endpoints(orgA), `{"url":"` + publicURL + `","event_types":[]}`, 400, "invalid_create", ""},
			{"too many types", readAll, http.MethodPost, endpoints(orgA),
				`{"url":"` + publicURL + `","event_types":["*"` + strings.Repeat(`,"*"`, webhook.MaxEventTypes) + `]}`, 400, "invalid_create", ""},
		}
		for _, c := range cases {
			r := e.do(t, c.method, c.path, e.codeToken(t, orgA, c.scopes...), c.body)
			assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.raw)
			assert.Equal(t, c.code, r.code(), c.name)
			if c.scope != "" {
				assert.Contains(t, r.header.Get("WWW-Authenticate"), `scope="`+c.scope+`"`, c.name)
			}
		}
		r := e.do(t, http.MethodPost, endpoints(orgA), e.codeToken(t, orgA, read, write), `{"url":"`+publicURL+`","event_types":["invoice.created"]}`)
		assert.Contains(t, r.body["error_description"], "invoice.created", "the refusal names the type")

		// "*" is granted the resources the token reads, and a PATCH of
		// event_types grants anew.
		tok := e.codeToken(t, orgA, read, write, "svc:accounts:read", "svc:vehicles:read")
		ep := e.create(t, tok, orgA, `{"url":"`+publicURL+`","event_types":["*"]}`)
		assert.JSONEq(t, `["accounts","vehicles","webhook_endpoints"]`, e.row(t, ep["id"].(string)).grantResources)
		r = e.do(t, http.MethodPatch, endpoints(orgA)+"/"+ep["id"].(string), e.codeToken(t, orgA, read, write, "svc:quotations:read"), `{"event_types":["quotation.*"]}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.JSONEq(t, `["quotations","webhook_endpoints"]`, e.row(t, ep["id"].(string)).grantResources)
		// A PATCH of the URL alone needs what the endpoint gets too, and
		// grants anew.
		r = e.do(t, http.MethodPatch, endpoints(orgA)+"/"+ep["id"].(string), e.codeToken(t, orgA, read, write), `{"url":"https://1.0.0.1/"}`)
		assert.Equal(t, http.StatusForbidden, r.status, r.raw)
		assert.Equal(t, "insufficient_scope", r.code())
		assert.Contains(t, r.header.Get("WWW-Authenticate"), `scope="svc:quotations:read"`)
		assert.Equal(t, publicURL, e.row(t, ep["id"].(string)).url)
		r = e.do(t, http.MethodPatch, endpoints(orgA)+"/"+ep["id"].(string), e.codeToken(t, orgA, read, write, "svc:quotations:read", "svc:vehicles:read"), `{"url":"https://1.0.0.1/"}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.JSONEq(t, `["quotations","vehicles","webhook_endpoints"]`, e.row(t, ep["id"].(string)).grantResources)
	})
}

func TestClientCredentialsBranches(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		scopes := []string{read, write, "svc:quotations:read"}
		onlyA1 := e.ccToken(t, orgA, []string{a1}, scopes...)
		every := e.ccToken(t, orgA, []string{a1, a2}, scopes...)
		cases := []struct {
			name   string
			token  string
			body   string
			status int
			code   string
		}{
			{"another branch", onlyA1, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":["` + a2 + `"]}`, 403, "insufficient_scope"},
			{"no branches, not covering all", onlyA1, `{"url":"` + publicURL + `","event_types":["*"]}`, 403, "insufficient_scope"},
			{"every branch, not covering all", onlyA1, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":null}`, 403, "insufficient_scope"},
			{"a branch of another organization", onlyA1, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":["` + b1 + `"]}`, 400, "invalid_create"},
			{"not a uuid", every, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":["a1"]}`, 400, "invalid_create"},
			{"an empty list", every, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":[]}`, 400, "invalid_create"},
			{"its branch", onlyA1, `{"url":"` + publicURL + `","event_types":["*"],"branch_ids":["` + a1 + `"]}`, 201, ""},
			{"covering all", every, `{"url":"` + publicURL + `","event_types":["*"]}`, 201, ""},
		}
		for _, c := range cases {
			r := e.do(t, http.MethodPost, endpoints(orgA), c.token, c.body)
			assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.raw)
			assert.Equal(t, c.code, r.code(), c.name)
		}

		ep := e.create(t, onlyA1, orgA, `{"url":"`+publicURL+`","event_types":["quotation.*"],"branch_ids":["`+a1+`"]}`)
		id := ep["id"].(string)
		got := e.row(t, id)
		assert.JSONEq(t, `["`+a1+`"]`, got.grantBranches.String)
		assert.JSONEq(t, `["quotations","webhook_endpoints"]`, got.grantResources)
		item := endpoints(orgA) + "/" + id
		r := e.do(t, http.MethodPatch, item, onlyA1, `{"branch_ids":["`+a1+`","`+a2+`"]}`)
		assert.Equal(t, http.StatusForbidden, r.status, r.raw)
		r = e.do(t, http.MethodPatch, item, onlyA1, `{"branch_ids":null}`)
		assert.Equal(t, http.StatusForbidden, r.status, r.raw)

		// An endpoint of every branch, set by an authorization-code token,
		// does not exist for a client-credentials token of one branch: it
		// may not read it, redirect it, re-grant it or delete it, nor its
		// deliveries; the list leaves it out.
		code := e.codeToken(t, orgA, scopes...)
		all := e.create(t, code, orgA, `{"url":"`+publicURL+`","event_types":["*"]}`)["id"].(string)
		allItem := endpoints(orgA) + "/" + all
		for _, req := range []struct{ method, path, body string }{
			{http.MethodGet, allItem, ""},
			{http.MethodPatch, allItem, `{"url":"https://1.0.0.1/"}`},
			{http.MethodPatch, allItem, `{"event_types":["quotation.created"],"branch_ids":["` + a1 + `"]}`},
			{http.MethodDelete, allItem, ""},
			{http.MethodGet, allItem + "/deliveries", ""},
			{http.MethodPost, allItem + "/deliveries/" + all + "/redeliver", ""},
		} {
			r = e.do(t, req.method, req.path, onlyA1, req.body)
			assert.Equal(t, http.StatusNotFound, r.status, "%s %s: %s", req.method, req.path, r.raw)
		}
		assert.Equal(t, publicURL, e.do(t, http.MethodGet, allItem, every, "").data()["url"], "the URL is unchanged")
		list := e.do(t, http.MethodGet, endpoints(orgA), onlyA1, "")
		require.Equal(t, http.StatusOK, list.status, list.raw)
		var ids []string
		for _, item := range list.list() {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
		assert.Contains(t, ids, id)
		assert.NotContains(t, ids, all, "a token of one branch lists the endpoints of its branches only")
		assert.Len(t, ids, 2, "this one and the one of the cases above")
		assert.Equal(t, 2.0, list.body["pagination"].(map[string]any)["total"])
		// A token that covers every branch manages it; an
		// authorization-code token's PATCH grants every branch again.
		r = e.do(t, http.MethodPatch, allItem, every, `{"event_types":["quotation.created"],"branch_ids":["`+a1+`"]}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.JSONEq(t, `["`+a1+`","`+a2+`"]`, e.row(t, all).grantBranches.String)
		r = e.do(t, http.MethodPatch, allItem, code, `{"branch_ids":null}`)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.False(t, e.row(t, all).grantBranches.Valid)
	})
}

func TestURLGuard(t *testing.T) {
	t.Parallel()
	refused := []string{
		"http://127.0.0.1:8080/hook", "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/",
		"http://localhost:9000/hook", "http://[::1]/hook", "http://192.168.1.10/",
		"http://[2002:a00:1::1]/hook", "http://[2001::1]/hook", "http://198.18.0.1/", "http://192.0.0.170/", "http://203.0.113.5/", "http://[100::1]/",
	}
	malformed := []string{"ftp://1.1.1.1/", "/relative", "https://user:pw@1.1.1.1/", "https://1.1.1.1/" + strings.Repeat("a", 2048)}
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "allowed"}[allow], func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(a *webhook.API) { a.Guard.AllowPrivate = allow }, func(t *testing.T, e *env) {
				tok := e.codeToken(t, orgA, readAll...)
				id := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
				for _, u := range refused {
					r := e.do(t, http.MethodPost, endpoints(orgA), tok, body(map[string]any{"url": u, "event_types": []string{"*"}}))
					p := e.do(t, http.MethodPatch, endpoints(orgA)+"/"+id, tok, body(map[string]any{"url": u}))
					if allow {
						assert.Equal(t, http.StatusCreated, r.status, "%s: %s", u, r.raw)
						assert.Equal(t, http.StatusOK, p.status, "%s: %s", u, p.raw)
						continue
					}
					assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", u, r.raw)
					assert.Equal(t, "invalid_create", r.code(), u)
					assert.Contains(t, r.body["error_description"], "address", u)
					assert.Equal(t, http.StatusBadRequest, p.status, "%s: %s", u, p.raw)
					assert.Equal(t, "invalid_update", p.code(), u)
				}
				for _, u := range malformed {
					r := e.do(t, http.MethodPost, endpoints(orgA), tok, body(map[string]any{"url": u, "event_types": []string{"*"}}))
					assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", u, r.raw)
					assert.Equal(t, "invalid_create", r.code(), u)
				}
			})
		})
	}
}

func TestMaxEndpoints(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(a *webhook.API) { a.MaxEndpoints = 2 }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		b := body(map[string]any{"url": publicURL, "event_types": []string{"*"}})
		first := e.create(t, tok, orgA, b)
		e.create(t, tok, orgA, b)
		r := e.do(t, http.MethodPost, endpoints(orgA), tok, b)
		assert.Equal(t, http.StatusConflict, r.status, r.raw)
		assert.Equal(t, "conflict", r.code())
		// Another organization has its own count; a deletion makes room.
		e.create(t, e.codeToken(t, orgB, readAll...), orgB, b)
		require.Equal(t, http.StatusOK, e.do(t, http.MethodDelete, endpoints(orgA)+"/"+first["id"].(string), tok, "").status)
		e.create(t, tok, orgA, b)
	})
}

// Concurrent POSTs never pass MaxEndpoints together.
func TestMaxEndpointsConcurrently(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(a *webhook.API) { a.MaxEndpoints = 3 }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		b := body(map[string]any{"url": publicURL, "event_types": []string{"*"}})
		statuses := make(chan int, 8)
		var wg sync.WaitGroup
		for range cap(statuses) {
			wg.Go(func() { statuses <- e.do(t, http.MethodPost, endpoints(orgA), tok, b).status })
		}
		wg.Wait()
		close(statuses)
		got := map[int]int{}
		for s := range statuses {
			got[s]++
		}
		assert.Equal(t, map[int]int{http.StatusCreated: 3, http.StatusConflict: 5}, got)
	})
}

func TestBodies(t *testing.T) {
	t.Parallel()
	eachBackend(t, nil, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		id := e.create(t, tok, orgA, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))["id"].(string)
		item := endpoints(orgA) + "/" + id
		big := `{"url":"` + publicURL + `","event_types":["*"],"x":"` + strings.Repeat("a", webhook.MaxBodyBytes) + `"}`
		cases := []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"unknown member", http.MethodPost, endpoints(orgA), `{"url":"` + publicURL + `","event_types":["*"],"secret":"whsec_x"}`, 400, "invalid_create"},
			{"status on create", http.MethodPost, endpoints(orgA), `{"url":"` + publicURL + `","event_types":["*"],"status":"disabled"}`, 400, "invalid_create"},
			{"unknown member on update", http.MethodPatch, item, `{"secret":"whsec_x"}`, 400, "invalid_update"},
			{"no url", http.MethodPost, endpoints(orgA), `{"event_types":["*"]}`, 400, "invalid_create"},
			{"no event types", http.MethodPost, endpoints(orgA), `{"url":"` + publicURL + `"}`, 400, "invalid_create"},
			{"url not a string", http.MethodPost, endpoints(orgA), `{"url":5,"event_types":["*"]}`, 400, "invalid_create"},
			{"null url", http.MethodPatch, item, `{"url":null}`, 400, "invalid_update"},
			{"event types not a list", http.MethodPatch, item, `{"event_types":"*"}`, 400, "invalid_update"},
			{"null event types", http.MethodPatch, item, `{"event_types":null}`, 400, "invalid_update"},
			{"bad status", http.MethodPatch, item, `{"status":"paused"}`, 400, "invalid_update"},
			{"bad JSON", http.MethodPost, endpoints(orgA), `{"url":`, 400, "invalid_request"},
			{"not an object", http.MethodPatch, item, `[1]`, 400, "invalid_request"},
			{"a member twice", http.MethodPatch, item, `{"status":"enabled","status":"disabled"}`, 400, "invalid_request"},
			{"trailing data", http.MethodPatch, item, `{} {}`, 400, "invalid_request"},
			{"too large", http.MethodPost, endpoints(orgA), big, 413, "payload_too_large"},
		}
		for _, c := range cases {
			r := e.do(t, c.method, c.path, tok, c.body)
			assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.raw)
			assert.Equal(t, c.code, r.code(), c.name)
		}
		// Content-Type is required.
		req, err := http.NewRequest(http.MethodPatch, e.http.URL+item, strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)

		methods := []struct {
			method, path, allow string
		}{
			{http.MethodPut, endpoints(orgA), "GET, HEAD, POST"},
			{http.MethodPut, item, "GET, HEAD, PATCH, DELETE"},
			{http.MethodPost, item, "GET, HEAD, PATCH, DELETE"},
			{http.MethodDelete, item + "/deliveries", "GET, HEAD"},
			{http.MethodGet, item + "/deliveries/" + id + "/redeliver", "POST"},
		}
		for _, m := range methods {
			r := e.do(t, m.method, m.path, tok, "")
			assert.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", m.method, m.path)
			assert.Equal(t, m.allow, r.header.Get("Allow"), "%s %s", m.method, m.path)
		}
		assert.Equal(t, http.StatusOK, e.do(t, http.MethodHead, item, tok, "").status)
		assert.Equal(t, http.StatusUnauthorized, e.do(t, http.MethodGet, item, "", "").status)
		r := e.do(t, http.MethodGet, item, e.sign(t, &bearer.Claims{Subject: "user-1"}), "")
		assert.Equal(t, http.StatusForbidden, r.status, "a product user token")
		assert.Equal(t, "invalid_token_type", r.code())
	})
}

// Middleware wraps every route after tenancy: it sees the tenant, and does
// not run for a refused token.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tn, ok := tenancy.FromContext(r.Context()); ok {
				w.Header().Set("X-Organization", tn.OrganizationID)
			}
			next.ServeHTTP(w, r)
		})
	}
	eachBackend(t, func(a *webhook.API) { a.Registry.Middleware = mw }, func(t *testing.T, e *env) {
		tok := e.codeToken(t, orgA, readAll...)
		r := e.do(t, http.MethodGet, endpoints(orgA), tok, "")
		require.Equal(t, http.StatusOK, r.status, r.raw)
		assert.Equal(t, orgA, r.header.Get("X-Organization"))
		r = e.do(t, http.MethodPost, endpoints(orgA), tok, body(map[string]any{"url": publicURL, "event_types": []string{"*"}}))
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		assert.Equal(t, orgA, r.header.Get("X-Organization"))
		r = e.do(t, http.MethodGet, endpoints(orgA), e.codeToken(t, orgA), "")
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Empty(t, r.header.Get("X-Organization"))
	})
}
