// Package oauthtest is the conformance suite of [oauth.Store]: an
// implementation proves that it behaves as the token service expects by
// calling [TestStore] from its own tests, as testing/slogtest does for
// slog handlers.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// Concurrency of the race tests: how many goroutines rotate one refresh
// token, or redeem one code, at once, and how many times each race runs on
// one store. The first round also fills the store's connection pool, if it
// has one, which staggers the goroutines; later rounds find it warm and
// race in earnest.
const (
	concurrentRotations   = 50
	concurrentRedemptions = 20
	raceRounds            = 5
)

// base is the time the tests run at: fixed, UTC, with microsecond digits,
// the precision a store must keep.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// TestStore runs the conformance suite against the stores newStore returns.
// Every call of newStore must return a new, empty, migrated store; the
// subtests run in parallel, each on its own store.
//
// Beyond the documentation of [oauth.Store], the suite requires that:
// a store keeps timestamps to the microsecond and returns them in UTC;
// lists come back with their elements in order, and a nil or empty list
// comes back empty; SaveCode and SaveRefreshToken refuse an existing hash
// with oauth.ErrDuplicate; a rotation whose successor hash exists fails
// with oauth.ErrDuplicate and leaves the token unspent; RotateRefreshToken
// checks revocation before reuse (a spent token of a revoked family gives
// oauth.ErrRevoked); RevokeFamily of a family with no token yet revokes the
// tokens saved in it later; every token of a family reports the family's
// AuthorizedAt, as saved with its first token, whatever the rotations, and
// a rotation's successor the spent token's Resource;
// RevokeUserFamilies and RevokeClientFamilies count only the families they
// revoked; SaveGrant
// accepts the same consent again.
func TestStore(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("apps", func(t *testing.T) {
		t.Parallel()
		testApps(t, newStore)
	})
	t.Run("codes", func(t *testing.T) {
		t.Parallel()
		testCodes(t, newStore)
	})
	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		testRefresh(t, newStore)
	})
	t.Run("timestamps", func(t *testing.T) {
		t.Parallel()
		testTimestamps(t, newStore)
	})
	t.Run("grants", func(t *testing.T) {
		t.Parallel()
		testGrants(t, newStore)
	})
	t.Run("client families", func(t *testing.T) {
		t.Parallel()
		testClientFamilies(t, newStore)
	})
}

func testApps(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("create and get", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newApp()
		require.NoError(t, s.CreateApp(t.Context(), want))
		got, err := s.App(t.Context(), want.ClientID)
		require.NoError(t, err)
		assertApp(t, want, got)
	})
	t.Run("a public client", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newApp()
		want.Public, want.SecretHash, want.BranchIDs = true, []byte{}, []string{}
		require.NoError(t, s.CreateApp(t.Context(), want))
		got, err := s.App(t.Context(), want.ClientID)
		require.NoError(t, err)
		assertApp(t, want, got)
	})
	t.Run("a dynamically registered client", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := registeredApp()
		require.NoError(t, s.CreateApp(t.Context(), want))
		got, err := s.App(t.Context(), want.ClientID)
		require.NoError(t, err)
		assertApp(t, want, got)
	})
	t.Run("duplicate client id", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		first := newApp()
		require.NoError(t, s.CreateApp(t.Context(), first))
		second := newApp()
		second.ClientID, second.Name = first.ClientID, "Impostor"
		require.ErrorIs(t, s.CreateApp(t.Context(), second), oauth.ErrDuplicate)
		got, err := s.App(t.Context(), first.ClientID)
		require.NoError(t, err)
		assertApp(t, first, got)
	})
	t.Run("set secret hash", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		app := newApp()
		require.NoError(t, s.CreateApp(t.Context(), app))
		other := newApp()
		require.NoError(t, s.CreateApp(t.Context(), other))
		hash := randomHash()
		require.NoError(t, s.SetSecretHash(t.Context(), app.ClientID, hash))
		got, err := s.App(t.Context(), app.ClientID)
		require.NoError(t, err)
		assert.Equal(t, hash, got.SecretHash)
		got, err = s.App(t.Context(), other.ClientID)
		require.NoError(t, err)
		assert.Equal(t, other.SecretHash, got.SecretHash, "another app's secret changed")
	})
	t.Run("set secret hash of unknown app", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		require.ErrorIs(t, s.SetSecretHash(t.Context(), randomID(), randomHash()), oauth.ErrNotFound)
	})
	t.Run("unknown app", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		app, err := s.App(t.Context(), randomID())
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Nil(t, app)
	})
	t.Run("lists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, tc := range listCases {
			app := newApp()
			app.Scopes, app.BranchIDs, app.RedirectURIs = tc.list, tc.list, tc.list
			require.NoError(t, s.CreateApp(t.Context(), app), tc.name)
			got, err := s.App(t.Context(), app.ClientID)
			require.NoError(t, err, tc.name)
			assertList(t, tc.list, got.Scopes, tc.name)
			assertList(t, tc.list, got.BranchIDs, tc.name)
			assertList(t, tc.list, got.RedirectURIs, tc.name)
		}
	})
}

// listCases are the lists that must round-trip.
var listCases = []struct {
	name string
	list []string
}{
	{"nil", nil},
	{"empty", []string{}},
	{"one", []string{"svc:orders:read"}},
	{"several in order", []string{"svc:orders:write", "svc:accounts:read", "openid"}},
	{"awkward characters", []string{`a "quoted" value`, "comma, inside", `back\slash`, "ünïcödé ✓", "", "[]", "null"}},
}

func testCodes(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("redeem once", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newCode()
		require.NoError(t, s.SaveCode(t.Context(), want))
		family := randomID()
		got, err := s.RedeemCode(t.Context(), want.Hash, family, base)
		require.NoError(t, err)
		want.FamilyID = family
		assertCode(t, want, got)
	})
	t.Run("redeem twice", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newCode()
		require.NoError(t, s.SaveCode(t.Context(), want))
		family := randomID()
		_, err := s.RedeemCode(t.Context(), want.Hash, family, base)
		require.NoError(t, err)
		got, err := s.RedeemCode(t.Context(), want.Hash, randomID(), base.Add(time.Second))
		require.ErrorIs(t, err, oauth.ErrSpent)
		require.NotNil(t, got, "a spent code is returned with ErrSpent")
		want.FamilyID = family
		assertCode(t, want, got)
	})
	t.Run("unknown code", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		got, err := s.RedeemCode(t.Context(), randomHash(), randomID(), base)
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Nil(t, got)
		got, err = s.Code(t.Context(), randomHash())
		require.ErrorIs(t, err, oauth.ErrNotFound)
		assert.Nil(t, got)
	})
	t.Run("look up without spending", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newCode()
		require.NoError(t, s.SaveCode(t.Context(), want))
		for range 2 {
			got, err := s.Code(t.Context(), want.Hash)
			require.NoError(t, err)
			assertCode(t, want, got)
		}
		family := randomID()
		_, err := s.RedeemCode(t.Context(), want.Hash, family, base)
		require.NoError(t, err, "looking a code up spent it")
		got, err := s.Code(t.Context(), want.Hash)
		require.NoError(t, err)
		want.FamilyID = family
		assertCode(t, want, got)
	})
	t.Run("duplicate hash", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := newCode()
		require.NoError(t, s.SaveCode(t.Context(), c))
		again := newCode()
		again.Hash = c.Hash
		require.ErrorIs(t, s.SaveCode(t.Context(), again), oauth.ErrDuplicate)
	})
	t.Run("without nonce and auth time", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		want := newCode()
		want.Nonce, want.AuthTime = "", time.Time{}
		require.NoError(t, s.SaveCode(t.Context(), want))
		got, err := s.Code(t.Context(), want.Hash)
		require.NoError(t, err)
		assertCode(t, want, got)
		assert.True(t, got.AuthTime.IsZero(), "an unknown AuthTime comes back zero")
	})
	t.Run("expiry is the caller's", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		c := newCode()
		c.ExpiresAt = base.Add(-time.Hour)
		require.NoError(t, s.SaveCode(t.Context(), c))
		_, err := s.RedeemCode(t.Context(), c.Hash, randomID(), base)
		require.NoError(t, err)
	})
	t.Run("lists", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, tc := range listCases {
			c := newCode()
			c.Scopes = tc.list
			require.NoError(t, s.SaveCode(t.Context(), c), tc.name)
			got, err := s.RedeemCode(t.Context(), c.Hash, randomID(), base)
			require.NoError(t, err, tc.name)
			assertList(t, tc.list, got.Scopes, tc.name)
		}
	})
	t.Run("concurrent redemptions", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for round := range raceRounds {
			testConcurrentRedemptions(t, s, round)
		}
	})
}

// testConcurrentRedemptions redeems one code from many goroutines at once,
// each with its own family: exactly one must succeed; every other gets
// ErrSpent and the code with the winner's family.
func testConcurrentRedemptions(t *testing.T, s oauth.Store, round int) {
	c := newCode()
	require.NoError(t, s.SaveCode(t.Context(), c))
	families := make([]string, concurrentRedemptions)
	for i := range families {
		families[i] = randomID()
	}
	codes := make([]*oauth.Code, concurrentRedemptions)
	errs := make([]error, concurrentRedemptions)
	race(concurrentRedemptions, func(i int) {
		codes[i], errs[i] = s.RedeemCode(t.Context(), c.Hash, families[i], base)
	})
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "round %d: redemptions %d and %d both succeeded", round, winner, i)
			winner = i
		}
	}
	require.NotEqual(t, -1, winner, "round %d: no redemption succeeded: %v", round, errs)
	for i, err := range errs {
		if i == winner {
			continue
		}
		require.ErrorIs(t, err, oauth.ErrSpent, "round %d: redemption %d", round, i)
		require.NotNil(t, codes[i], "round %d: redemption %d", round, i)
		assert.Equal(t, families[winner], codes[i].FamilyID, "round %d: redemption %d does not report the first redemption's family", round, i)
	}
}

// testConcurrentRotations rotates one token from many goroutines at once,
// each with its own successor: exactly one must succeed and store its
// successor; every other is reuse (ErrSpent), or finds the family revoked
// by an earlier reuse (ErrRevoked), and stores nothing; the family ends
// revoked.
func testConcurrentRotations(t *testing.T, s oauth.Store, round int) {
	rt := newToken()
	require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
	next := make([][]byte, concurrentRotations)
	for i := range next {
		next[i] = randomHash()
	}
	spent := make([]*oauth.RefreshToken, concurrentRotations)
	errs := make([]error, concurrentRotations)
	race(concurrentRotations, func(i int) {
		spent[i], errs[i] = s.RotateRefreshToken(t.Context(), rt.Hash, next[i], base.Add(time.Hour), base)
	})

	winner := -1
	var nSpent, nRevoked int
	for i, err := range errs {
		switch {
		case err == nil:
			require.Equal(t, -1, winner, "round %d: rotations %d and %d both succeeded", round, winner, i)
			winner = i
			assertToken(t, rt, spent[i])
		case errors.Is(err, oauth.ErrSpent):
			nSpent++
			assert.NotNil(t, spent[i], "round %d: rotation %d: a reused token is returned with ErrSpent", round, i)
		case errors.Is(err, oauth.ErrRevoked):
			nRevoked++
		default:
			require.Fail(t, "unexpected error", "round %d: rotation %d: %v", round, i, err)
		}
	}
	require.NotEqual(t, -1, winner, "round %d: no rotation succeeded: %v", round, errs)
	t.Logf("round %d: %d rotations: 1 succeeded, %d reuse (ErrSpent), %d found the family revoked (ErrRevoked)", round, concurrentRotations, nSpent, nRevoked)
	assert.Positive(t, nSpent, "round %d: no rotation was reported as reuse", round)

	for i, h := range next {
		_, err := s.RefreshToken(t.Context(), h)
		if i == winner {
			assert.NoError(t, err, "round %d: the winner's successor is missing", round)
		} else {
			assert.ErrorIs(t, err, oauth.ErrNotFound, "round %d: loser %d stored a successor", round, i)
		}
	}
	revoked, err := s.FamilyRevoked(t.Context(), rt.FamilyID)
	require.NoError(t, err)
	assert.True(t, revoked, "round %d: concurrent reuse must revoke the family", round)
	_, err = s.RotateRefreshToken(t.Context(), next[winner], randomHash(), base.Add(time.Hour), base)
	require.ErrorIs(t, err, oauth.ErrRevoked, "round %d: the winner's successor must be revoked with its family", round)
}

func testTimestamps(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"utc", base},
		{"whole second", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"last microsecond of a second", time.Date(2026, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{"one microsecond", time.Date(2026, 7, 1, 12, 0, 0, 1000, time.UTC)},
		{"east of utc", time.Date(2026, 7, 1, 12, 30, 15, 250001000, time.FixedZone("UTC+5:30", 5*3600+1800))},
		{"west of utc", time.Date(2026, 2, 28, 23, 0, 0, 123000, time.FixedZone("UTC-8", -8*3600))},
		{"local", time.Date(2026, 10, 25, 2, 30, 0, 42000, time.Local)},
		{"far future", time.Date(2999, 6, 15, 8, 0, 0, 700000000, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)

			app := newApp()
			app.CreatedAt = tc.at
			require.NoError(t, s.CreateApp(t.Context(), app))
			gotApp, err := s.App(t.Context(), app.ClientID)
			require.NoError(t, err)
			assertTime(t, tc.at, gotApp.CreatedAt, "App.CreatedAt")

			c := newCode()
			c.ExpiresAt = tc.at
			require.NoError(t, s.SaveCode(t.Context(), c))
			gotCode, err := s.RedeemCode(t.Context(), c.Hash, randomID(), base)
			require.NoError(t, err)
			assertTime(t, tc.at, gotCode.ExpiresAt, "Code.ExpiresAt")

			rt := newToken()
			rt.ExpiresAt = tc.at
			require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
			gotToken, err := s.RefreshToken(t.Context(), rt.Hash)
			require.NoError(t, err)
			assertTime(t, tc.at, gotToken.ExpiresAt, "RefreshToken.ExpiresAt")

			next := randomHash()
			spent, err := s.RotateRefreshToken(t.Context(), rt.Hash, next, tc.at.Add(time.Microsecond), base)
			require.NoError(t, err)
			assertTime(t, tc.at, spent.ExpiresAt, "spent RefreshToken.ExpiresAt")
			gotToken, err = s.RefreshToken(t.Context(), next)
			require.NoError(t, err)
			assertTime(t, tc.at.Add(time.Microsecond), gotToken.ExpiresAt, "successor RefreshToken.ExpiresAt")
		})
	}
}

func testGrants(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	t.Run("save", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		g := &oauth.Grant{
			ClientID: randomID(), UserID: randomID(), OrganizationID: randomID(),
			Scopes: []string{"svc:orders:read", "svc:orders:write"}, CreatedAt: base,
		}
		require.NoError(t, s.SaveGrant(t.Context(), g))
		// Consent is asked at every authorization: the same consent again,
		// or with other scopes, is no error.
		require.NoError(t, s.SaveGrant(t.Context(), g))
		again := *g
		again.Scopes, again.CreatedAt = nil, base.Add(time.Minute)
		require.NoError(t, s.SaveGrant(t.Context(), &again))
	})
}

// race runs f(0) … f(n-1) in n goroutines released at once, and waits for
// them all.
func race(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

// newApp returns an app with random ids and every field set.
func newApp() *oauth.App {
	return &oauth.App{
		ID:             randomID(),
		ClientID:       randomID(),
		Name:           "Dispatch board",
		OrganizationID: randomID(),
		Scopes:         []string{"svc:orders:read", "svc:shipments:write"},
		BranchIDs:      []string{randomID(), randomID()},
		RedirectURIs:   []string{"https://app.example.com/callback", "http://127.0.0.1:8765/cb"},
		SecretHash:     randomHash(),
		CreatedAt:      base,
	}
}

// newCode returns an unused code with a random hash and every field set.
func newCode() *oauth.Code {
	return &oauth.Code{
		Hash:           randomHash(),
		ClientID:       randomID(),
		UserID:         randomID(),
		OrganizationID: randomID(),
		RedirectURI:    "https://app.example.com/callback?x=1",
		Challenge:      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Scopes:         []string{"svc:orders:read", "svc:orders:write"},
		ExpiresAt:      base.Add(time.Minute),
		Resource:       "https://tms.example.com",
		Nonce:          "n-0S6_WzA2Mj",
		AuthTime:       base.Add(-time.Hour).Add(123456 * time.Microsecond),
	}
}

// newToken returns the first token of a new family, with every field set.
func newToken() *oauth.RefreshToken {
	return &oauth.RefreshToken{
		Hash:           randomHash(),
		FamilyID:       randomID(),
		ClientID:       randomID(),
		UserID:         randomID(),
		OrganizationID: randomID(),
		Scopes:         []string{"svc:orders:read", "svc:accounts:read"},
		ExpiresAt:      base.Add(30 * 24 * time.Hour),
		AuthorizedAt:   base.Add(-time.Hour),
		Resource:       "https://tms.example.com",
	}
}

// randomID returns a new identifier, made as the token service makes them:
// a UUID version 7.
func randomID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// randomHash returns the SHA-256 of random bytes, as the token service
// stores codes and tokens.
func randomHash() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails.
	h := sha256.Sum256(b)
	return h[:]
}

func assertApp(t *testing.T, want, got *oauth.App) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.ID, got.ID, "ID")
	assert.Equal(t, want.ClientID, got.ClientID, "ClientID")
	assert.Equal(t, want.Name, got.Name, "Name")
	assert.Equal(t, want.OrganizationID, got.OrganizationID, "OrganizationID")
	assertList(t, want.Scopes, got.Scopes, "Scopes")
	assertList(t, want.BranchIDs, got.BranchIDs, "BranchIDs")
	assertList(t, want.RedirectURIs, got.RedirectURIs, "RedirectURIs")
	assert.Equal(t, len(want.SecretHash) == 0, len(got.SecretHash) == 0, "an empty SecretHash")
	if len(want.SecretHash) > 0 {
		assert.Equal(t, want.SecretHash, got.SecretHash, "SecretHash")
	}
	assert.Equal(t, want.Public, got.Public, "Public")
	assert.Equal(t, len(want.RegistrationTokenHash) == 0, len(got.RegistrationTokenHash) == 0, "an empty RegistrationTokenHash")
	if len(want.RegistrationTokenHash) > 0 {
		assert.Equal(t, want.RegistrationTokenHash, got.RegistrationTokenHash, "RegistrationTokenHash")
	}
	assert.Equal(t, want.TokenEndpointAuthMethod, got.TokenEndpointAuthMethod, "TokenEndpointAuthMethod")
	assertTime(t, want.CreatedAt, got.CreatedAt, "CreatedAt")
}

func assertCode(t *testing.T, want, got *oauth.Code) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.Hash, got.Hash, "Hash")
	assert.Equal(t, want.ClientID, got.ClientID, "ClientID")
	assert.Equal(t, want.UserID, got.UserID, "UserID")
	assert.Equal(t, want.OrganizationID, got.OrganizationID, "OrganizationID")
	assert.Equal(t, want.RedirectURI, got.RedirectURI, "RedirectURI")
	assert.Equal(t, want.Challenge, got.Challenge, "Challenge")
	assertList(t, want.Scopes, got.Scopes, "Scopes")
	assertTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
	assert.Equal(t, want.FamilyID, got.FamilyID, "FamilyID")
	assert.Equal(t, want.Resource, got.Resource, "Resource")
	assert.Equal(t, want.Nonce, got.Nonce, "Nonce")
	assertTime(t, want.AuthTime, got.AuthTime, "AuthTime")
}

func assertToken(t *testing.T, want, got *oauth.RefreshToken) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.Hash, got.Hash, "Hash")
	assert.Equal(t, want.FamilyID, got.FamilyID, "FamilyID")
	assert.Equal(t, want.ClientID, got.ClientID, "ClientID")
	assert.Equal(t, want.UserID, got.UserID, "UserID")
	assert.Equal(t, want.OrganizationID, got.OrganizationID, "OrganizationID")
	assertList(t, want.Scopes, got.Scopes, "Scopes")
	assertTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
	assertTime(t, want.AuthorizedAt, got.AuthorizedAt, "AuthorizedAt")
	assert.Equal(t, want.Resource, got.Resource, "Resource (rotation keeps it)")
}

// assertList checks that got holds want's elements in order; a nil or empty
// want must come back empty.
func assertList(t *testing.T, want, got []string, what string) {
	t.Helper()
	if len(want) == 0 {
		assert.Empty(t, got, what)
		return
	}
	assert.Equal(t, want, got, what)
}

// assertTime checks that got is the instant want, in UTC.
func assertTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	assert.True(t, want.Equal(got), "%s: want %v, got %v", what, want.UTC(), got)
	assert.Equal(t, time.UTC, got.Location(), "%s is not in UTC", what)
}

// testClientFamilies checks RevokeClientFamilies: every family of the
// client, rotated or not, and no other; families revoked before are not
// counted.
func testClientFamilies(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	s := newStore(t)
	client, other := randomID(), randomID()
	token := func(clientID string) *oauth.RefreshToken {
		rt := newToken()
		rt.ClientID = clientID
		require.NoError(t, s.SaveRefreshToken(t.Context(), rt))
		return rt
	}
	plain, rotatedFirst, revokedBefore, bystander := token(client), token(client), token(client), token(other)
	rotated := randomHash()
	_, err := s.RotateRefreshToken(t.Context(), rotatedFirst.Hash, rotated, base.Add(time.Hour), base)
	require.NoError(t, err)
	require.NoError(t, s.RevokeFamily(t.Context(), revokedBefore.FamilyID, base))

	n, err := s.RevokeClientFamilies(t.Context(), client, base.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the client's live families")
	for _, rt := range []*oauth.RefreshToken{plain, rotatedFirst, revokedBefore} {
		revoked, err := s.FamilyRevoked(t.Context(), rt.FamilyID)
		require.NoError(t, err)
		assert.True(t, revoked)
	}
	_, err = s.RotateRefreshToken(t.Context(), rotated, randomHash(), base.Add(time.Hour), base.Add(time.Minute))
	require.ErrorIs(t, err, oauth.ErrRevoked, "the newest token of a revoked family")
	revoked, err := s.FamilyRevoked(t.Context(), bystander.FamilyID)
	require.NoError(t, err)
	assert.False(t, revoked, "another client's family")

	n, err = s.RevokeClientFamilies(t.Context(), client, base.Add(time.Minute))
	require.NoError(t, err)
	assert.Zero(t, n, "revoked families are not counted again")
	n, err = s.RevokeClientFamilies(t.Context(), randomID(), base)
	require.NoError(t, err)
	assert.Zero(t, n, "an unknown client")
}
