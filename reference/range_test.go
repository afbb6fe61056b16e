package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// A filter value that fits the API's int64 but would not fit a 32-bit
// column is answered, never a 500: integer columns are bigint.
func TestIntegerFilterRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, d, _, err := openAndMigrate(ctx, testdb.PostgresURL(t), defaultDBMaxConns)
	require.NoError(t, err)
	ten := seedTenant(t, db, d, "P", 1)
	store := newOAuthStore(db, d)
	key, _ := store.SigningKey(ctx)
	keys, _ := bearer.NewKeySet(key)
	api, err := newAPI(db, d, &bearer.Verifier{Keys: keys, Issuer: "i"}, testLogger(t))
	require.NoError(t, err)
	h := newHandler(db, newOAuthServer(db, store, keys, "i", testLogger(t)), api)
	now := time.Now()
	tok, _ := keys.Sign(&bearer.Claims{Issuer: "i", Subject: "s", Audience: "authenticated", Role: "authenticated", IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "j", OrganizationID: ten.org, ClientID: "c", Scopes: []string{"svc:quotations:read"}})
	req := httptest.NewRequest("GET", "/v1/"+ten.branches[0]+"/quotations?filter=total_packages:eq:99999999999", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"total":0`)
}
