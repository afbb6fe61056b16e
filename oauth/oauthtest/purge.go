package oauthtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// PurgeStore is a Store that purges.
type PurgeStore interface {
	oauth.Store
	oauth.Purger
}

// purgeBefore is what the purge tests delete before: what expired before
// base, and authorizations begun 90 days before that.
var purgeBefore = oauth.PurgeBefore{Expired: base, Authorized: base.Add(-90 * 24 * time.Hour)}

// TestPurger runs the conformance suite of [oauth.Purger] against the
// stores newStore returns, each new, empty and migrated; the subtests run
// in parallel, each on its own store. Beyond the documentation of
// oauth.Purger it requires that "before" is strict: what ended at the
// cutoff itself is kept.
func TestPurger(t *testing.T, newStore func(t *testing.T) PurgeStore) {
	t.Run("empty store", func(t *testing.T) {
		t.Parallel()
		res, err := newStore(t).Purge(t.Context(), purgeBefore)
		require.NoError(t, err)
		assert.Equal(t, oauth.PurgeResult{}, res)
	})
	t.Run("codes", func(t *testing.T) {
		t.Parallel()
		testPurgeCodes(t, newStore(t))
	})
	t.Run("refresh tokens and families", func(t *testing.T) {
		t.Parallel()
		testPurgeRefresh(t, newStore(t))
	})
	t.Run("grants", func(t *testing.T) {
		t.Parallel()
		testPurgeGrants(t, newStore(t))
	})
	t.Run("concurrent purges", func(t *testing.T) {
		t.Parallel()
		testConcurrentPurges(t, newStore(t))
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		saveCode(t, s, base.Add(-time.Hour))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Purge(ctx, purgeBefore)
		require.ErrorIs(t, err, context.Canceled)
		res, err := s.Purge(t.Context(), purgeBefore)
		require.NoError(t, err)
		assert.Equal(t, oauth.PurgeResult{Codes: 1}, res, "a later purge goes on")
	})
}

// testPurgeCodes checks that unused codes go when they expire and redeemed
// ones when their authorization reaches its maximum age.
func testPurgeCodes(t *testing.T, s PurgeStore) {
	type code struct {
		name      string
		expiresAt time.Time
		usedAt    time.Time // zero: unused
		gone      bool
	}
	codes := []code{
		{name: "unused, expired before", expiresAt: base.Add(-time.Microsecond), gone: true},
		{name: "unused, expired long before", expiresAt: base.Add(-365 * 24 * time.Hour), gone: true},
		{name: "unused, expiring at the cutoff", expiresAt: base},
		{name: "unused, live", expiresAt: base.Add(time.Minute)},
		{name: "redeemed before the authorization cutoff", expiresAt: purgeBefore.Authorized, usedAt: purgeBefore.Authorized.Add(-time.Second), gone: true},
		{name: "redeemed at the authorization cutoff", expiresAt: purgeBefore.Authorized.Add(time.Minute), usedAt: purgeBefore.Authorized},
		// Expired long ago, but its family may be in use: a replay must
		// still revoke it.
		{name: "redeemed, expired, family may be live", expiresAt: base.Add(-30 * 24 * time.Hour), usedAt: base.Add(-30*24*time.Hour - time.Second)},
	}
	saved := make([]*oauth.Code, len(codes))
	want := oauth.PurgeResult{}
	for i, c := range codes {
		saved[i] = saveCode(t, s, c.expiresAt)
		if !c.usedAt.IsZero() {
			saved[i].FamilyID = randomID()
			_, err := s.RedeemCode(t.Context(), saved[i].Hash, saved[i].FamilyID, c.usedAt)
			require.NoError(t, err, c.name)
		}
		if c.gone {
			want.Codes++
		}
	}

	res, err := s.Purge(t.Context(), purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, want, res)
	for i, c := range codes {
		got, err := s.Code(t.Context(), saved[i].Hash)
		if c.gone {
			assert.ErrorIs(t, err, oauth.ErrNotFound, c.name)
			continue
		}
		if assert.NoError(t, err, c.name) {
			assert.Equal(t, saved[i].FamilyID, got.FamilyID, c.name)
		}
	}
	res, err = s.Purge(t.Context(), purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{}, res, "a second purge finds nothing")
}

// testPurgeRefresh checks which tokens and families a purge deletes, and
// that what it keeps still works: rotation, revocation, reuse detection.
func testPurgeRefresh(t *testing.T, s PurgeStore) {
	ctx := t.Context()
	save := func(authorizedAt, expiresAt time.Time) *oauth.RefreshToken {
		rt := newToken()
		rt.AuthorizedAt, rt.ExpiresAt = authorizedAt, expiresAt
		require.NoError(t, s.SaveRefreshToken(ctx, rt))
		return rt
	}
	rotate := func(rt *oauth.RefreshToken, expiresAt, now time.Time) []byte {
		next := randomHash()
		_, err := s.RotateRefreshToken(ctx, rt.Hash, next, expiresAt, now)
		require.NoError(t, err)
		return next
	}
	day := 24 * time.Hour

	// A live family whose first token is spent but unexpired: its reuse
	// must still be detected.
	live := save(base.Add(-10*day), base.Add(20*day))
	liveNext := rotate(live, base.Add(30*day), base.Add(-5*day))
	// A live family whose first token, spent, has expired.
	old := save(base.Add(-40*day), base.Add(-time.Microsecond))
	oldNext := rotate(old, base.Add(10*day), base.Add(-35*day))
	// A family revoked before the cutoff, and one revoked at it.
	revokedOld := save(base.Add(-20*day), base.Add(10*day))
	require.NoError(t, s.RevokeFamily(ctx, revokedOld.FamilyID, base.Add(-time.Microsecond)))
	revokedNow := save(base.Add(-20*day), base.Add(10*day))
	require.NoError(t, s.RevokeFamily(ctx, revokedNow.FamilyID, base))
	// A family past its maximum age, whose token (by a changed setting)
	// has not expired yet, and one that reaches it at the cutoff.
	maxAged := save(purgeBefore.Authorized.Add(-time.Microsecond), base.Add(time.Hour))
	atMaxAge := save(purgeBefore.Authorized, base.Add(time.Hour))
	// Families revoked before any token was saved in them.
	tokenlessOld, tokenlessNow := randomID(), randomID()
	require.NoError(t, s.RevokeFamily(ctx, tokenlessOld, base.Add(-time.Second)))
	require.NoError(t, s.RevokeFamily(ctx, tokenlessNow, base))

	res, err := s.Purge(ctx, purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{RefreshTokens: 3, Families: 3}, res, "tokens: old, revokedOld, maxAged; families: revokedOld, maxAged, tokenlessOld")

	for _, tc := range []struct {
		name string
		hash []byte
		gone bool
	}{
		{"spent, unexpired token of a live family", live.Hash, false},
		{"newest token of a live family", liveNext, false},
		{"spent, expired token", old.Hash, true},
		{"newest token after an expired one", oldNext, false},
		{"token of a family revoked before", revokedOld.Hash, true},
		{"token of a family revoked at the cutoff", revokedNow.Hash, false},
		{"token of a family past its maximum age", maxAged.Hash, true},
		{"token of a family at its maximum age", atMaxAge.Hash, false},
	} {
		_, err := s.RefreshToken(ctx, tc.hash)
		if tc.gone {
			assert.ErrorIs(t, err, oauth.ErrNotFound, tc.name)
		} else {
			assert.NoError(t, err, tc.name)
		}
	}
	revoked, err := s.FamilyRevoked(ctx, tokenlessNow)
	require.NoError(t, err)
	assert.True(t, revoked, "a family revoked at the cutoff stays revoked")
	revoked, err = s.FamilyRevoked(ctx, revokedOld.FamilyID)
	require.NoError(t, err)
	assert.False(t, revoked, "a purged family is unknown")

	_, err = s.RotateRefreshToken(ctx, revokedNow.Hash, randomHash(), base.Add(day), base)
	assert.ErrorIs(t, err, oauth.ErrRevoked, "a kept revoked family still refuses its tokens")
	rotate(&oauth.RefreshToken{Hash: oldNext}, base.Add(day), base)
	_, err = s.RotateRefreshToken(ctx, live.Hash, randomHash(), base.Add(day), base)
	assert.ErrorIs(t, err, oauth.ErrSpent, "reuse of a kept spent token is still detected")
	revoked, err = s.FamilyRevoked(ctx, live.FamilyID)
	require.NoError(t, err)
	assert.True(t, revoked, "and still revokes its family")

	res, err = s.Purge(ctx, purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{}, res, "a second purge finds nothing")
}

// testPurgeGrants checks that grants go with their authorization.
func testPurgeGrants(t *testing.T, s PurgeStore) {
	for _, at := range []time.Time{
		purgeBefore.Authorized.Add(-365 * 24 * time.Hour),
		purgeBefore.Authorized.Add(-time.Microsecond),
		purgeBefore.Authorized,
		base,
	} {
		require.NoError(t, s.SaveGrant(t.Context(), &oauth.Grant{
			ClientID: randomID(), UserID: randomID(), OrganizationID: randomID(),
			Scopes: []string{"svc:orders:read"}, CreatedAt: at,
		}))
	}
	res, err := s.Purge(t.Context(), purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{Grants: 2}, res)
	res, err = s.Purge(t.Context(), purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{}, res, "a second purge finds nothing")
}

// testConcurrentPurges runs purges at once, as replicas do: together they
// delete each record once, and count it once.
func testConcurrentPurges(t *testing.T, s PurgeStore) {
	const n, purges = 25, 4
	want := oauth.PurgeResult{Codes: n, RefreshTokens: n, Families: n}
	for range n {
		saveCode(t, s, base.Add(-time.Hour))
		rt := newToken()
		rt.AuthorizedAt, rt.ExpiresAt = base.Add(-48*time.Hour), base.Add(-time.Hour)
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		require.NoError(t, s.RevokeFamily(t.Context(), randomID(), base.Add(-time.Hour)))
	}
	var mu sync.Mutex
	var got oauth.PurgeResult
	race(purges, func(int) {
		res, err := s.Purge(t.Context(), purgeBefore)
		assert.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		got.Codes += res.Codes
		got.RefreshTokens += res.RefreshTokens
		got.Families += res.Families
		got.Grants += res.Grants
	})
	assert.Equal(t, want, got)
	res, err := s.Purge(t.Context(), purgeBefore)
	require.NoError(t, err)
	assert.Equal(t, oauth.PurgeResult{}, res, "nothing is left")
}

// saveCode saves an unused code that expires at expiresAt.
func saveCode(t *testing.T, s oauth.Store, expiresAt time.Time) *oauth.Code {
	t.Helper()
	c := newCode()
	c.ExpiresAt = expiresAt
	require.NoError(t, s.SaveCode(t.Context(), c))
	return c
}
