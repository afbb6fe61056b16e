package bearer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// Verify checks that a token's grant fits its claims; tokens signed before
// oauth_grant_type existed keep the grant their claims always showed.
func TestVerifyGrant(t *testing.T) {
	now := time.Now()
	key := testKey("k", 3)
	v := &bearer.Verifier{Keys: mustKeySet(t, key), Issuer: testIssuer}
	header := map[string]any{"alg": "HS256", "typ": "JWT", "kid": "k"}
	token := func(extra map[string]any) string {
		c := map[string]any{"iss": testIssuer, "sub": "s", "aud": "authenticated", "role": "authenticated",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "fam.x"}
		for k, val := range extra {
			c[k] = val
		}
		return rawToken(t, header, c, key.Secret)
	}
	oauthClaims := func(extra map[string]any) map[string]any {
		m := map[string]any{"oauth_client_id": "c", "organization_id": "o", "oauth_scopes": []string{}}
		for k, val := range extra {
			m[k] = val
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		token     string
		problem   string
		grant     string
		branchIDs []string
	}{
		{"client credentials", token(oauthClaims(map[string]any{"oauth_grant_type": "client_credentials", "oauth_branch_ids": []string{"b1"}})), "", bearer.GrantClientCredentials, []string{"b1"}},
		{"client credentials of no branch", token(oauthClaims(map[string]any{"oauth_grant_type": "client_credentials", "oauth_branch_ids": []string{}})), "", bearer.GrantClientCredentials, []string{}},
		{"client credentials without oauth_branch_ids", token(oauthClaims(map[string]any{"oauth_grant_type": "client_credentials", "oauth_app_name": "Sync"})), "lacks oauth_branch_ids", "", nil},
		{"client credentials with null oauth_branch_ids", token(oauthClaims(map[string]any{"oauth_grant_type": "client_credentials", "oauth_branch_ids": nil})), "lacks oauth_branch_ids", "", nil},
		{"authorization code", token(oauthClaims(map[string]any{"oauth_grant_type": "authorization_code"})), "", bearer.GrantAuthorizationCode, nil},
		{"authorization code with oauth_branch_ids", token(oauthClaims(map[string]any{"oauth_grant_type": "authorization_code", "oauth_branch_ids": []string{"b1"}})), "carries oauth_branch_ids", "", nil},
		{"unknown grant", token(oauthClaims(map[string]any{"oauth_grant_type": "password"})), "unknown", "", nil},
		{"a grant on a product user token", token(map[string]any{"oauth_grant_type": "authorization_code"}), "without oauth_client_id", "", nil},
		{"signed before the claim: branches mean client credentials", token(oauthClaims(map[string]any{"oauth_branch_ids": []string{}})), "", bearer.GrantClientCredentials, []string{}},
		{"signed before the claim: no branches mean the authorization code", token(oauthClaims(nil)), "", bearer.GrantAuthorizationCode, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Verify(context.Background(), tc.token)
			if tc.problem != "" {
				require.Error(t, err)
				assert.Equal(t, apierrors.CodeInvalidToken, apierrors.CodeOf(err))
				assert.Contains(t, err.Error(), tc.problem)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.grant, c.Grant)
			assert.Equal(t, tc.grant == bearer.GrantClientCredentials, c.ClientCredentials())
			assert.Equal(t, tc.branchIDs, c.BranchIDs)
			if tc.grant == bearer.GrantAuthorizationCode {
				assert.Equal(t, "fam", c.FamilyID())
			} else {
				assert.Empty(t, c.FamilyID())
			}
		})
	}

	t.Run("Sign refuses a grant that does not fit", func(t *testing.T) {
		ks := mustKeySet(t, key)
		base := func(grant string, branches []string) *bearer.Claims {
			return &bearer.Claims{Issuer: testIssuer, Subject: "s", Audience: bearer.Audience, Role: bearer.Role,
				IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "j", OrganizationID: "o",
				ClientID: "c", BranchIDs: branches, Grant: grant}
		}
		user := base(bearer.GrantAuthorizationCode, nil)
		user.ClientID = ""
		for _, c := range []*bearer.Claims{base(bearer.GrantAuthorizationCode, []string{"b1"}), base(bearer.GrantAuthorizationCode, []string{}), base("implicit", nil), user} {
			_, err := ks.Sign(c)
			assert.Error(t, err, "%+v", c)
		}
		_, err := ks.Sign(base(bearer.GrantClientCredentials, nil))
		assert.NoError(t, err, "a client-credentials token of no branch")
	})
}
