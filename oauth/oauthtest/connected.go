package oauthtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// TestConnectedAppStore runs the conformance suite of [oauth.ConnectedAppStore]
// against the stores newStore returns, which must implement it. Every call
// of newStore must return a new, empty, migrated store; the subtests run in
// parallel, each on its own store.
//
// Beyond the documentation of the interface, the suite requires that
// OrganizationApps and AppUses of an organization with none answer empty, not
// an error; that DisconnectApp touches the app's consents, unredeemed codes
// and families in that organization alone; and that concurrent DisconnectApp
// calls of one app, each at its own time, count every family once in all.
// A store may write an app's use at most once a minute (RecordAppUse then
// ignores a use that soon after the last), so the suite records uses
// minutes apart.
func TestConnectedAppStore(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	connected := func(t *testing.T) connectedStore {
		s := newStore(t)
		cs, ok := s.(oauth.ConnectedAppStore)
		require.True(t, ok, "%T does not implement oauth.ConnectedAppStore", s)
		return connectedStore{s, cs}
	}
	t.Run("uses", func(t *testing.T) {
		t.Parallel()
		testAppUses(t, connected(t))
	})
	t.Run("apps and grants", func(t *testing.T) {
		t.Parallel()
		testOrganizationAppsAndGrants(t, connected(t))
	})
	t.Run("disconnect", func(t *testing.T) {
		t.Parallel()
		testDisconnectApp(t, connected(t))
	})
	t.Run("concurrent disconnects", func(t *testing.T) {
		t.Parallel()
		testConcurrentDisconnects(t, connected(t))
	})
}

// connectedStore is a store under test and its ConnectedAppStore.
type connectedStore struct {
	oauth.Store
	oauth.ConnectedAppStore
}

func testAppUses(t *testing.T, s connectedStore) {
	ctx := context.Background()
	app, org, other := randomID(), randomID(), randomID()
	uses, err := s.AppUses(ctx, org)
	require.NoError(t, err)
	assert.Empty(t, uses, "no use recorded yet")

	require.NoError(t, s.RecordAppUse(ctx, app, org, base))
	require.NoError(t, s.RecordAppUse(ctx, app, org, base.Add(-time.Hour)), "an earlier use is ignored, not an error")
	uses, err = s.AppUses(ctx, org)
	require.NoError(t, err)
	assertTime(t, base, uses[app], "the latest use")

	later := base.Add(10 * time.Minute)
	require.NoError(t, s.RecordAppUse(ctx, app, org, later))
	require.NoError(t, s.RecordAppUse(ctx, app, other, base.Add(time.Hour)))
	uses, err = s.AppUses(ctx, org)
	require.NoError(t, err)
	assert.Len(t, uses, 1)
	assertTime(t, later, uses[app], "a later use replaces it; another organization's does not")
}

func testOrganizationAppsAndGrants(t *testing.T, s connectedStore) {
	ctx := context.Background()
	org := randomID()
	apps, err := s.OrganizationApps(ctx, org)
	require.NoError(t, err)
	assert.Empty(t, apps, "no app yet")

	var want []string
	for i := range 3 {
		a := newApp()
		if i < 2 {
			a.OrganizationID = org
			want = append(want, a.ClientID)
		}
		require.NoError(t, s.CreateApp(ctx, a))
	}
	apps, err = s.OrganizationApps(ctx, org)
	require.NoError(t, err)
	var got []string
	for _, a := range apps {
		assert.Equal(t, org, a.OrganizationID)
		got = append(got, a.ClientID)
	}
	assert.ElementsMatch(t, want, got, "the organization's apps, not another's")

	first := oauth.Grant{ClientID: randomID(), UserID: randomID(), OrganizationID: org, Scopes: []string{"svc:orders:read"}, CreatedAt: base}
	second := oauth.Grant{ClientID: randomID(), UserID: randomID(), OrganizationID: org, Scopes: []string{"svc:orders:write"}, CreatedAt: base.Add(time.Minute)}
	elsewhere := oauth.Grant{ClientID: first.ClientID, UserID: first.UserID, OrganizationID: randomID(), Scopes: []string{"svc:orders:read"}, CreatedAt: base}
	for _, g := range []oauth.Grant{second, elsewhere, first} {
		require.NoError(t, s.SaveGrant(ctx, &g))
	}
	grants, err := s.OrganizationGrants(ctx, org)
	require.NoError(t, err)
	require.Len(t, grants, 2, "the organization's consents, not another's")
	for i, want := range []oauth.Grant{first, second} {
		assert.Equal(t, want.ClientID, grants[i].ClientID, "oldest first")
		assert.Equal(t, want.UserID, grants[i].UserID)
		assertList(t, want.Scopes, grants[i].Scopes, "scopes")
		assertTime(t, want.CreatedAt, grants[i].CreatedAt, "created_at")
	}
}

func testDisconnectApp(t *testing.T, s connectedStore) {
	ctx := context.Background()
	app, otherApp, org, otherOrg := randomID(), randomID(), randomID(), randomID()

	// family saves the first token of a new family of the client in the
	// organization and returns the family's id.
	family := func(clientID, organizationID string) string {
		tok := newToken()
		tok.ClientID, tok.OrganizationID = clientID, organizationID
		require.NoError(t, s.SaveRefreshToken(ctx, tok))
		return tok.FamilyID
	}
	// code saves an unredeemed code of the client in the organization.
	code := func(clientID, organizationID string) []byte {
		c := newCode()
		c.ClientID, c.OrganizationID = clientID, organizationID
		require.NoError(t, s.SaveCode(ctx, c))
		return c.Hash
	}
	grant := func(clientID, organizationID string) {
		g := oauth.Grant{ClientID: clientID, UserID: randomID(), OrganizationID: organizationID, Scopes: []string{"svc:orders:read"}, CreatedAt: base}
		require.NoError(t, s.SaveGrant(ctx, &g))
	}

	revokedBefore := family(app, org)
	require.NoError(t, s.RevokeFamily(ctx, revokedBefore, base.Add(-time.Hour)))
	gone := []string{family(app, org), family(app, org)}
	kept := []string{family(app, otherOrg), family(otherApp, org)}
	goneCode := code(app, org)
	keptCodes := [][]byte{code(app, otherOrg), code(otherApp, org)}
	grant(app, org)
	grant(app, org)
	grant(app, otherOrg)
	grant(otherApp, org)

	at := base.Add(time.Minute)
	families, grants, err := s.DisconnectApp(ctx, app, org, at)
	require.NoError(t, err)
	assert.Equal(t, 2, families, "the families it revoked; one revoked before does not count")
	assert.Equal(t, 2, grants, "the consents it deleted")

	for _, f := range gone {
		revoked, err := s.FamilyRevoked(ctx, f)
		require.NoError(t, err)
		assert.True(t, revoked, "the app's families in the organization are revoked")
	}
	for _, f := range kept {
		revoked, err := s.FamilyRevoked(ctx, f)
		require.NoError(t, err)
		assert.False(t, revoked, "another organization's family of the app, or another app's, stands")
	}
	_, err = s.Code(ctx, goneCode)
	assert.ErrorIs(t, err, oauth.ErrNotFound, "the app's unredeemed code in the organization is deleted")
	for _, h := range keptCodes {
		_, err := s.Code(ctx, h)
		assert.NoError(t, err, "another organization's code of the app, or another app's, stands")
	}
	grantsOf := func(organizationID string) []string {
		gs, err := s.OrganizationGrants(ctx, organizationID)
		require.NoError(t, err)
		var clients []string
		for _, g := range gs {
			clients = append(clients, g.ClientID)
		}
		return clients
	}
	assert.Equal(t, []string{otherApp}, grantsOf(org), "only the other app's consent is left in the organization")
	assert.Equal(t, []string{app}, grantsOf(otherOrg), "the app's consent in another organization stands")

	cutOffs, err := s.LastCutOffs(ctx, org)
	require.NoError(t, err)
	assert.Len(t, cutOffs, 1)
	assertTime(t, at, cutOffs[app], "the cut-off")
	cutOffs, err = s.LastCutOffs(ctx, otherOrg)
	require.NoError(t, err)
	assert.Empty(t, cutOffs, "no cut-off in another organization")
	list, err := s.CutOffs(ctx, at)
	require.NoError(t, err)
	require.Len(t, list, 1, "the cut-offs at or after a time")
	assert.Equal(t, bearer.CutOff{OrganizationID: org, ClientID: app, At: list[0].At}, list[0])
	assertTime(t, at, list[0].At, "the cut-off's time")
	list, err = s.CutOffs(ctx, at.Add(time.Second))
	require.NoError(t, err)
	assert.Empty(t, list, "none after it")

	// Again, later: nothing left to revoke or delete, and the later
	// cut-off is the last.
	again := at.Add(time.Hour)
	families, grants, err = s.DisconnectApp(ctx, app, org, again)
	require.NoError(t, err)
	assert.Zero(t, families)
	assert.Zero(t, grants)
	cutOffs, err = s.LastCutOffs(ctx, org)
	require.NoError(t, err)
	assertTime(t, again, cutOffs[app], "the last cut-off")
}

func testConcurrentDisconnects(t *testing.T, s connectedStore) {
	ctx := context.Background()
	app, org := randomID(), randomID()
	var ids []string
	for range 10 {
		tok := newToken()
		tok.ClientID, tok.OrganizationID = app, org
		require.NoError(t, s.SaveRefreshToken(ctx, tok))
		ids = append(ids, tok.FamilyID)
	}
	const callers = 6
	counts := make([]int, callers)
	errs := make([]error, callers)
	race(callers, func(i int) {
		counts[i], _, errs[i] = s.DisconnectApp(ctx, app, org, base.Add(time.Duration(i)*time.Second))
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	assert.Equal(t, len(ids), total, "every family is counted once, by the call that revoked it: %v", counts)
	for _, f := range ids {
		revoked, err := s.FamilyRevoked(ctx, f)
		require.NoError(t, err)
		assert.True(t, revoked)
	}
	cutOffs, err := s.CutOffs(ctx, base)
	require.NoError(t, err)
	assert.Len(t, cutOffs, callers, "each call recorded its cut-off")
}
