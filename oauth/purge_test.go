package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
)

// puRecorder is a store that records what it is asked to purge.
type puRecorder struct {
	oauth.Store
	got oauth.PurgeBefore
}

// Purge records before.
func (r *puRecorder) Purge(_ context.Context, before oauth.PurgeBefore) (oauth.PurgeResult, error) {
	r.got = before
	return oauth.PurgeResult{}, nil
}

// Server.Purge asks the store to purge what ended longer than the
// retention ago, and never less than an access token's lifetime ago.
func TestPurgeCutoffs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name          string
		retention     time.Duration
		accessTTL     time.Duration
		refreshMaxAge time.Duration
		keep          time.Duration // what Expired is before now
		maxAge        time.Duration // what Authorized is before Expired
	}{
		{name: "defaults", keep: oauth.DefaultPurgeRetention, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a retention", retention: 30 * day, keep: 30 * day, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a retention shorter than an access token", retention: time.Minute, keep: oauth.DefaultAccessTokenTTL, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "longer access tokens", retention: 2 * time.Hour, accessTTL: 3 * time.Hour, keep: 3 * time.Hour, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a maximum age", refreshMaxAge: 10 * day, keep: oauth.DefaultPurgeRetention, maxAge: 10 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &puRecorder{}
			srv := &oauth.Server{Store: rec, Now: func() time.Time { return now }, AccessTokenTTL: tt.accessTTL, RefreshMaxAge: tt.refreshMaxAge}
			_, err := srv.Purge(t.Context(), tt.retention)
			require.NoError(t, err)
			assert.Equal(t, now.Add(-tt.keep), rec.got.Expired)
			assert.Equal(t, now.Add(-tt.keep-tt.maxAge), rec.got.Authorized)
		})
	}
}

func TestPurgeUnsupported(t *testing.T) {
	t.Parallel()
	srv := &oauth.Server{Store: struct{ oauth.Store }{}}
	_, err := srv.Purge(t.Context(), 0)
	assert.ErrorIs(t, err, oauth.ErrPurgeUnsupported)
}

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
			tok, err := e.srv.ExchangeCode(ctx, e.app, e.issueCode(t, e.app, challenge, "svc:orders:read"), redirect, verifier)
			require.NoError(t, err)
			return tok
		}
		refresh := func(token string) *oauth.Token {
			tok, err := e.srv.Refresh(ctx, "", token)
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
		_, err := e.srv.Refresh(ctx, "", reused.RefreshToken)
		puInvalidGrant(t, err, "already used")
		e.issueCode(t, e.app, challenge, "svc:orders:read") // never exchanged

		e.clock.Advance(2 * day)
		assert.Equal(t, oauth.PurgeResult{}, purge(), "within the retention nothing goes")
		_, err = e.srv.Refresh(ctx, "", reusedNext.RefreshToken)
		puInvalidGrant(t, err, "revoked")

		e.clock.Advance(oauth.DefaultPurgeRetention - 2*day + 2*time.Minute)
		assert.Equal(t, oauth.PurgeResult{Codes: 1, RefreshTokens: 2, Families: 1}, purge(),
			"the unused code, the revoked family and its two tokens")
		for _, token := range []string{reused.RefreshToken, reusedNext.RefreshToken} {
			_, err = e.srv.Refresh(ctx, "", token)
			puInvalidGrant(t, err, "invalid")
		}
		liveLast := refresh(liveNext.RefreshToken)
		_, err = e.srv.Refresh(ctx, "", live.RefreshToken)
		puInvalidGrant(t, err, "already used")
		_, err = e.srv.Refresh(ctx, "", liveLast.RefreshToken)
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
		tok, err := e.srv.ExchangeCode(ctx, e.app, e.issueCode(t, e.app, challenge, "svc:orders:read"), redirect, verifier)
		require.NoError(t, err)
		_, err = e.srv.Refresh(ctx, "", tok.RefreshToken)
		require.NoError(t, err)
		_, err = e.srv.Refresh(ctx, "", tok.RefreshToken) // reuse: the family is revoked
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
