package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// benchAPI returns the reference's handler over d and a token of d's
// branch that may read and write quotations. With limited, the API has
// serve's REST rate limit (in process, with a quota no benchmark reaches).
func benchAPI(b *testing.B, d benchData, limited, outbox bool) (http.Handler, string) {
	b.Helper()
	return benchAPIWith(b, d, limited, func(api *resource.Registry) {
		if !outbox {
			api.Outbox = nil // the floor of the outbox's cost
		}
	})
}

// benchAPIWith is benchAPI, with edit applied to the registry before it is
// mounted.
func benchAPIWith(b *testing.B, d benchData, limited bool, edit func(api *resource.Registry)) (http.Handler, string) {
	b.Helper()
	ctx := context.Background()
	store := newOAuthStore(d.db, query.Postgres)
	key, err := store.SigningKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		b.Fatal(err)
	}
	const issuer = "https://bench.test"
	api, err := newAPI(d.db, query.Postgres, &bearer.Verifier{Keys: keys, Issuer: issuer, Families: store}, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	if edit != nil {
		edit(api)
	}
	if limited {
		limits, err := newRateLimits(ctx, limitsConfig{REST: 1 << 30}, nil, testLogger(b))
		if err != nil {
			b.Fatal(err)
		}
		rest := limits.REST()
		api.Middleware, api.ChargeExtra = rest.Wrap, rest.ChargeMore
	}
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{Issuer: issuer, Subject: newID(), Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: newID(), OrganizationID: d.org,
		ClientID: "bench", Scopes: []string{"svc:quotations:read", "svc:quotations:write"}, BranchIDs: []string{d.branch}, AppName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return newHandler(d.db, newOAuthServer(d.db, store, keys, issuer, testLogger(b)), api), token
}

// benchCall returns a function that sends one request to h and fails the
// benchmark unless the answer has status want; body and headers are
// made per call by the functions given (nil for none).
func benchCall(b *testing.B, h http.Handler, token, method, target string, want int, body func() string, header func() map[string]string) func() {
	return func() {
		var req *http.Request
		if body != nil {
			req = httptest.NewRequest(method, target, strings.NewReader(body()))
			req.Header.Set("Content-Type", "application/json")
		} else {
			req = httptest.NewRequest(method, target, nil)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if header != nil {
			for k, v := range header() {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkSync measures what integrations use, at 1,000,000 quotations in
// a branch: the list of BenchmarkQuotationList with each count preference,
// and POST plain, with a new Idempotency-Key each time, and replayed.
func BenchmarkSync(b *testing.B) {
	d := loadQuotations(b, 1_000_000)
	h, token := benchAPI(b, d, false, true)
	limited, _ := benchAPI(b, d, true, true)
	noOutbox, _ := benchAPI(b, d, false, false)
	list := "/v1/" + d.branch + "/quotations?" + benchQuery
	for _, count := range []string{"exact", "estimated", "none"} {
		b.Run("list/count="+count, func(b *testing.B) {
			measure(b, false, benchCall(b, h, token, http.MethodGet, list, http.StatusOK, nil,
				func() map[string]string { return map[string]string{"Prefer": "count=" + count} }))
		})
	}
	// Pages of the whole branch in the default order (created_at desc),
	// without a count, so that they measure the page alone: the first, the
	// last by offset, and the last by cursor.
	all := "/v1/" + d.branch + "/quotations?limit=50"
	noCount := func() map[string]string { return map[string]string{"Prefer": "count=none"} }
	deep := benchCursorAt(b, h, token, all, 1_000_000-50)
	for _, p := range []struct{ name, target string }{
		{"page/first", all},
		{"page/last-by-offset", all + "&offset=" + strconv.Itoa(1_000_000-50)},
		{"page/last-by-cursor", all + "&after=" + url.QueryEscape(deep)},
	} {
		b.Run(p.name, func(b *testing.B) {
			measure(b, false, benchCall(b, h, token, http.MethodGet, p.target, http.StatusOK, nil, noCount))
		})
	}
	create := "/v1/" + d.branch + "/quotations"
	body := func() string {
		return fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-11-23","valid_until":"2026-12-23","total_packages":3}`, d.account)
	}
	b.Run("post/plain", func(b *testing.B) {
		measure(b, false, benchCall(b, h, token, http.MethodPost, create, http.StatusCreated, body, nil))
	})
	// The outbox's cost: the events of a write are appended in its
	// transaction, one statement, as served; the floor is the same API
	// with no outbox. In parallel, the writes of one organization take its
	// event sequence one after another at commit.
	b.Run("post/no-outbox", func(b *testing.B) {
		measure(b, false, benchCall(b, noOutbox, token, http.MethodPost, create, http.StatusCreated, body, nil))
	})
	b.Run("post/plain/parallel", func(b *testing.B) {
		b.SetParallelism(8)
		measure(b, true, benchCall(b, h, token, http.MethodPost, create, http.StatusCreated, body, nil))
	})
	b.Run("post/no-outbox/parallel", func(b *testing.B) {
		b.SetParallelism(8)
		measure(b, true, benchCall(b, noOutbox, token, http.MethodPost, create, http.StatusCreated, body, nil))
	})
	b.Run("post/idempotency-key", func(b *testing.B) {
		measure(b, false, benchCall(b, h, token, http.MethodPost, create, http.StatusCreated, body,
			func() map[string]string { return map[string]string{"Idempotency-Key": newID()} }))
	})
	// With serve's rate limit, which counts every request, a replay too,
	// before its key is looked up.
	b.Run("post/plain+ratelimit", func(b *testing.B) {
		measure(b, false, benchCall(b, limited, token, http.MethodPost, create, http.StatusCreated, body, nil))
	})
	b.Run("post/idempotency-key+ratelimit", func(b *testing.B) {
		measure(b, false, benchCall(b, limited, token, http.MethodPost, create, http.StatusCreated, body,
			func() map[string]string { return map[string]string{"Idempotency-Key": newID()} }))
	})
	b.Run("post/replay", func(b *testing.B) {
		key := map[string]string{"Idempotency-Key": newID()}
		measure(b, false, benchCall(b, h, token, http.MethodPost, create, http.StatusCreated, body,
			func() map[string]string { return key }))
	})
	b.Run("post/replay+ratelimit", func(b *testing.B) {
		key := map[string]string{"Idempotency-Key": newID()}
		measure(b, false, benchCall(b, limited, token, http.MethodPost, create, http.StatusCreated, body,
			func() map[string]string { return key }))
	})
}

// benchCursorAt returns the cursor of the page of list that starts after
// position records: the next_cursor of the page that ends there.
func benchCursorAt(b *testing.B, h http.Handler, token, list string, position int) string {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, list+"&offset="+strconv.Itoa(position-50), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Prefer", "count=none")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var page struct {
		Pagination struct {
			NextCursor string `json:"next_cursor"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Pagination.NextCursor == "" {
		b.Fatalf("no cursor at %d: %d %s", position, rec.Code, rec.Body.String())
	}
	return page.Pagination.NextCursor
}
