package oauthtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

func testRefresh(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	testRefreshSave(t, newStore)
	testRefreshRotation(t, newStore)
	testRefreshRevocation(t, newStore)
	testRefreshListsAndRaces(t, newStore)
}

// testRefreshSave tests the saving and reading of refresh tokens.
func testRefreshSave(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("save and read", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), want))
		got, err := s.RefreshToken(t.Context(), want.Hash)
		require.NoError(t, err)
		assertToken(t, want, got)
		revoked, err := s.FamilyRevoked(t.Context(), want.FamilyID)
		require.NoError(t, err)
		assert.False(t, revoked)
	})
	t.Run("unknown token", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		got, err := s.RefreshToken(t.Context(), randomHash())
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Nil(t, got)
	})
	t.Run("duplicate hash", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt := newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		again := newToken()
		again.Hash = rt.Hash
		require.ErrorIs(t, s.SaveRefreshToken(t.Context(), again), oauth.ErrDuplicate)
	})
}

// testRefreshRotation tests rotations: the successor, reuse, failures and expiry.
func testRefreshRotation(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("rotate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		first := newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), first))

		// A chain of rotations: each spends the previous token and stores
		// its successor in the same family.
		prev := first
		for i := range 3 {
			next := *first
			next.Hash, next.ExpiresAt = randomHash(), base.Add(time.Duration(i+1)*time.Hour)
			spent, err := s.RotateRefreshToken(t.Context(), prev.Hash, next.Hash, next.ExpiresAt, base)
			require.NoError(t, err, "rotation %d", i)
			assertToken(t, prev, spent)
			got, err := s.RefreshToken(t.Context(), next.Hash)
			require.NoError(t, err, "successor %d", i)
			assertToken(t, &next, got)
			old, err := s.RefreshToken(t.Context(), prev.Hash)
			require.NoError(t, err, "a spent token stays readable")
			assertToken(t, prev, old)
			prev = &next
		}
		revoked, err := s.FamilyRevoked(t.Context(), first.FamilyID)
		require.NoError(t, err)
		assert.False(t, revoked)
	})
	t.Run("reuse revokes the family", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		first := newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), first))
		second, third := randomHash(), randomHash()
		_, err := s.RotateRefreshToken(t.Context(), first.Hash, second, base.Add(time.Hour), base)
		require.NoError(t, err)
		_, err = s.RotateRefreshToken(t.Context(), second, third, base.Add(time.Hour), base)
		require.NoError(t, err)

		// first is spent: using it again is reuse.
		reused, err := s.RotateRefreshToken(t.Context(), first.Hash, randomHash(), base.Add(time.Hour), base.Add(time.Minute))
		require.ErrorIs(t, err, oauth.ErrSpent)
		require.NotNil(t, reused, "a reused token is returned with ErrSpent")
		assertToken(t, first, reused)

		revoked, err := s.FamilyRevoked(t.Context(), first.FamilyID)
		require.NoError(t, err)
		assert.True(t, revoked, "reuse must revoke the family")
		// The newest member is revoked too, and so is every spent one.
		_, err = s.RotateRefreshToken(t.Context(), third, randomHash(), base.Add(time.Hour), base.Add(2*time.Minute))
		require.ErrorIs(t, err, oauth.ErrRevoked)
		_, err = s.RotateRefreshToken(t.Context(), second, randomHash(), base.Add(time.Hour), base.Add(2*time.Minute))
		require.ErrorIs(t, err, oauth.ErrRevoked)
	})
	t.Run("failed rotations store no successor", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt := newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		_, err := s.RotateRefreshToken(t.Context(), rt.Hash, randomHash(), base.Add(time.Hour), base)
		require.NoError(t, err)
		for _, reuse := range []error{oauth.ErrSpent, oauth.ErrRevoked} {
			next := randomHash()
			_, err := s.RotateRefreshToken(t.Context(), rt.Hash, next, base.Add(time.Hour), base)
			require.ErrorIs(t, err, reuse)
			_, err = s.RefreshToken(t.Context(), next)
			require.ErrorIs(t, err, oauth.ErrNotFound, "a refused rotation stored its successor")
		}
	})
	t.Run("rotate unknown token", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		next := randomHash()
		got, err := s.RotateRefreshToken(t.Context(), randomHash(), next, base.Add(time.Hour), base)
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Nil(t, got)
		_, err = s.RefreshToken(t.Context(), next)
		require.ErrorIs(t, err, oauth.ErrNotFound)
	})
	t.Run("successor hash exists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt, other := newToken(), newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		require.NoError(t, s.SaveRefreshToken(t.Context(), other))
		_, err := s.RotateRefreshToken(t.Context(), rt.Hash, other.Hash, base.Add(time.Hour), base)
		require.ErrorIs(t, err, oauth.ErrDuplicate)
		// Atomic: the failed rotation did not spend the token.
		_, err = s.RotateRefreshToken(t.Context(), rt.Hash, randomHash(), base.Add(time.Hour), base)
		require.NoError(t, err, "a rotation that failed spent the token")
		got, err := s.RefreshToken(t.Context(), other.Hash)
		require.NoError(t, err)
		assertToken(t, other, got)
	})
	t.Run("expiry is the caller's", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt := newToken()
		rt.ExpiresAt = base.Add(-time.Hour)
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		_, err := s.RotateRefreshToken(t.Context(), rt.Hash, randomHash(), base.Add(time.Hour), base)
		require.NoError(t, err)
	})
}

// testRefreshRevocation tests the revocation of families and the time of an authorization.
func testRefreshRevocation(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("revoke then rotate", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt, bystander := newToken(), newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		require.NoError(t, s.SaveRefreshToken(t.Context(), bystander))
		require.NoError(t, s.RevokeFamily(t.Context(), rt.FamilyID, base))
		got, err := s.RotateRefreshToken(t.Context(), rt.Hash, randomHash(), base.Add(time.Hour), base)
		require.ErrorIs(t, err, oauth.ErrRevoked)
		if got != nil {
			assertToken(t, rt, got)
		}
		// Other families are untouched.
		_, err = s.RotateRefreshToken(t.Context(), bystander.Hash, randomHash(), base.Add(time.Hour), base)
		require.NoError(t, err)
	})
	t.Run("revoke before the first token", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		// A replayed code revokes its family, possibly before the first
		// redemption saved the family's first token.
		rt := newToken()
		require.NoError(t, s.RevokeFamily(t.Context(), rt.FamilyID, base))
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		revoked, err := s.FamilyRevoked(t.Context(), rt.FamilyID)
		require.NoError(t, err)
		assert.True(t, revoked)
		_, err = s.RotateRefreshToken(t.Context(), rt.Hash, randomHash(), base.Add(time.Hour), base)
		require.ErrorIs(t, err, oauth.ErrRevoked)
	})
	t.Run("family revoked", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt, other := newToken(), newToken()
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		require.NoError(t, s.SaveRefreshToken(t.Context(), other))
		for _, tc := range []struct {
			name   string
			family string
			revoke bool
			want   bool
		}{
			{"unknown", randomID(), false, false},
			{"live", rt.FamilyID, false, false},
			{"revoked", rt.FamilyID, true, true},
			{"revoked twice", rt.FamilyID, true, true},
			{"another family", other.FamilyID, false, false},
		} {
			if tc.revoke {
				require.NoError(t, s.RevokeFamily(t.Context(), tc.family, base), tc.name)
			}
			got, err := s.FamilyRevoked(t.Context(), tc.family)
			require.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, got, tc.name)
		}
	})
	t.Run("authorization time", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		rt := newToken()
		rt.AuthorizedAt = base.Add(-40 * 24 * time.Hour)
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		got, err := s.RefreshToken(t.Context(), rt.Hash)
		require.NoError(t, err)
		assertTime(t, rt.AuthorizedAt, got.AuthorizedAt, "AuthorizedAt")
		prev := rt.Hash
		for i := range 3 {
			next := randomHash()
			spent, err := s.RotateRefreshToken(t.Context(), prev, next, base.Add(time.Duration(i+1)*time.Hour), base.Add(time.Duration(i)*time.Hour))
			require.NoError(t, err)
			assertTime(t, rt.AuthorizedAt, spent.AuthorizedAt, "AuthorizedAt of the spent token")
			got, err := s.RefreshToken(t.Context(), next)
			require.NoError(t, err)
			assertTime(t, rt.AuthorizedAt, got.AuthorizedAt, "AuthorizedAt of the successor: rotation must not move it")
			prev = next
		}

		unset := newToken()
		unset.AuthorizedAt = time.Time{}
		before := time.Now()
		require.NoError(t, s.SaveRefreshToken(t.Context(), unset))
		got, err = s.RefreshToken(t.Context(), unset.Hash)
		require.NoError(t, err)
		assert.WithinDuration(t, before, got.AuthorizedAt, time.Minute, "a zero AuthorizedAt is the current time")
	})
	t.Run("revoke a user's families", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		user, other, orgA, orgB := randomID(), randomID(), randomID(), randomID()
		token := func(user, org string) *oauth.RefreshToken {
			rt := newToken()
			rt.UserID, rt.OrganizationID = user, org
			require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
			return rt
		}
		inA, rotatedInA, inB := token(user, orgA), token(user, orgA), token(user, orgB)
		bystander, revokedBefore := token(other, orgA), token(user, orgA)
		rotated := randomHash()
		_, err := s.RotateRefreshToken(t.Context(), rotatedInA.Hash, rotated, base.Add(time.Hour), base)
		require.NoError(t, err)
		require.NoError(t, s.RevokeFamily(t.Context(), revokedBefore.FamilyID, base))

		revoked := func(rt *oauth.RefreshToken) bool {
			got, err := s.FamilyRevoked(t.Context(), rt.FamilyID)
			require.NoError(t, err)
			return got
		}
		n, err := s.RevokeUserFamilies(t.Context(), user, orgA, base.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 2, n, "the user's live families in the organization")
		assert.True(t, revoked(inA))
		assert.True(t, revoked(rotatedInA))
		assert.False(t, revoked(inB), "a family of another organization")
		assert.False(t, revoked(bystander), "a family of another user")
		_, err = s.RotateRefreshToken(t.Context(), rotated, randomHash(), base.Add(time.Hour), base.Add(time.Minute))
		require.ErrorIs(t, err, oauth.ErrRevoked, "the newest token of a revoked family")

		n, err = s.RevokeUserFamilies(t.Context(), user, orgA, base.Add(time.Minute))
		require.NoError(t, err)
		assert.Zero(t, n, "revoked families are not counted again")

		n, err = s.RevokeUserFamilies(t.Context(), user, "", base.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 1, n, "every organization")
		assert.True(t, revoked(inB))
		assert.False(t, revoked(bystander))
		_, err = s.RotateRefreshToken(t.Context(), bystander.Hash, randomHash(), base.Add(time.Hour), base.Add(time.Minute))
		require.NoError(t, err, "another user's token still rotates")

		n, err = s.RevokeUserFamilies(t.Context(), randomID(), "", base)
		require.NoError(t, err)
		assert.Zero(t, n, "an unknown user")
	})
}

// testRefreshListsAndRaces tests lists of scopes and concurrent rotations.
func testRefreshListsAndRaces(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("lists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, tc := range listCases {
			rt := newToken()
			rt.Scopes = tc.list
			require.NoError(t, s.SaveRefreshToken(t.Context(), rt), tc.name)
			got, err := s.RefreshToken(t.Context(), rt.Hash)
			require.NoError(t, err, tc.name)
			assertList(t, tc.list, got.Scopes, tc.name)
			next := randomHash()
			_, err = s.RotateRefreshToken(t.Context(), rt.Hash, next, base.Add(time.Hour), base)
			require.NoError(t, err, tc.name)
			got, err = s.RefreshToken(t.Context(), next)
			require.NoError(t, err, tc.name)
			assertList(t, tc.list, got.Scopes, tc.name+" (successor)")
		}
	})
	t.Run("concurrent rotations", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for round := range raceRounds {
			testConcurrentRotations(t, s, round)
		}
	})
}
