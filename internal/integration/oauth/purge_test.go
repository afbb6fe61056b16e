package oauth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
)

// puInvalidGrant asserts that err is invalid_grant whose description says
// why.
func puInvalidGrant(t *testing.T, err error, why string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, apierrors.CodeInvalidGrant, apierrors.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), why)
}

// An authorization's state is purged once it has ended and the retention
// has passed: until then a replay is recognized for what it is, after it
// it is refused as unknown; live state is never purged.
func TestPurgeLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		day := 24 * time.Hour
		exchange := func() *oauth.Token {
			tok, err := e.srv.ExchangeCode(ctx, e.app, e.issueCode(t, e.app, challenge, "svc:orders:read"), redirect, verifier, "")
			require.NoError(t, err)
			return tok
		}
		refresh := func(token string) *oauth.Token {
			tok, err := e.srv.Refresh(ctx, "", token, "")
			require.NoError(t, err)
			return tok
		}
		purge := func() oauth.PurgeResult {
			res, err := e.srv.Purge(ctx, 0)
			require.NoError(t, err)
			return res
		}

		live := exchange()
		liveNext := refresh(live.RefreshToken)
		reused := exchange()
		reusedNext := refresh(reused.RefreshToken)
		_, err := e.srv.Refresh(ctx, "", reused.RefreshToken, "")
		puInvalidGrant(t, err, "already used")
		e.issueCode(t, e.app, challenge, "svc:orders:read") // never exchanged

		e.clock.Advance(2 * day)
		assert.Equal(t, oauth.PurgeResult{}, purge(), "within the retention nothing goes")
		_, err = e.srv.Refresh(ctx, "", reusedNext.RefreshToken, "")
		puInvalidGrant(t, err, "revoked")

		e.clock.Advance(oauth.DefaultPurgeRetention - 2*day + 2*time.Minute)
		assert.Equal(t, oauth.PurgeResult{Codes: 1, RefreshTokens: 2, Families: 1}, purge(),
			"the unused code, the revoked family and its two tokens")
		for _, token := range []string{reused.RefreshToken, reusedNext.RefreshToken} {
			_, err = e.srv.Refresh(ctx, "", token, "")
			puInvalidGrant(t, err, "invalid")
		}
		liveLast := refresh(liveNext.RefreshToken)
		_, err = e.srv.Refresh(ctx, "", live.RefreshToken, "")
		puInvalidGrant(t, err, "already used")
		_, err = e.srv.Refresh(ctx, "", liveLast.RefreshToken, "")
		puInvalidGrant(t, err, "revoked")

		e.clock.Advance(oauth.DefaultRefreshMaxAge)
		res := purge()
		assert.Equal(t, oauth.PurgeResult{Codes: 2, RefreshTokens: 3, Families: 1, Grants: 3}, res,
			"the live family, now past its maximum age: its codes, tokens and grants")
	})
}

// A revoked family is kept as long as access tokens issued from it may be
// valid, whatever the retention asked for, so that they stay refused.
func TestPurgeKeepsRevokedAccessTokensRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		tok, err := e.srv.ExchangeCode(ctx, e.app, e.issueCode(t, e.app, challenge, "svc:orders:read"), redirect, verifier, "")
		require.NoError(t, err)
		_, err = e.srv.Refresh(ctx, "", tok.RefreshToken, "")
		require.NoError(t, err)
		_, err = e.srv.Refresh(ctx, "", tok.RefreshToken, "") // reuse: the family is revoked
		puInvalidGrant(t, err, "already used")

		e.clock.Advance(oauth.DefaultAccessTokenTTL - time.Minute)
		res, err := e.srv.Purge(ctx, time.Second)
		require.NoError(t, err)
		assert.Zero(t, res.Families)
		_, err = e.verifier.Verify(ctx, tok.AccessToken)
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "revoked"), "refused as revoked: %v", err)

		e.clock.Advance(2 * time.Minute)
		res, err = e.srv.Purge(ctx, time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, res.Families, "gone once its access tokens have expired")
		_, err = e.verifier.Verify(ctx, tok.AccessToken)
		assert.Error(t, err, "expired")
	})
}
