package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/openapi"
)

// Connected apps: the apps that have access to an organization, and how an
// organization cuts one off.
//
// An app has access to an organization in two ways, and the listing has an
// entry for each (an app the organization registered and that its users
// also authorized has two):
//
//   - "client_credentials": the organization registered the app, which may
//     get tokens for itself with its secret, for the app's branches.
//   - "authorization_code": users of the organization consented to the app,
//     which acts for them on every branch of the organization.
//
// Disconnecting an app from an organization (DisconnectApp) records a
// cut-off, deletes the consents of the organization's users (the next
// authorization asks again), and revokes every refresh token family of the
// app in the organization (refresh gives invalid_grant). The cut-off makes
// the app's access tokens for the organization issued until then fail with
// 401 invalid_token: verifiers load the cut-offs into memory
// (bearer.CutOffList, refreshed every few seconds) and check them on every
// request without asking the database. An app the organization registered
// is also disabled: its client secret is replaced with one nobody knows, so
// it gets no new token until an admin rotates its secret, which enables it
// again.

// Kinds of connected apps, the "kind" of a ConnectedApp.
const (
	KindClientCredentials = bearer.GrantClientCredentials
	KindAuthorizationCode = bearer.GrantAuthorizationCode
)

// ConnectedAppStore keeps what the connected apps need beyond a Store:
// the use of apps and the cut-offs. A Store that implements it (package
// oauth/sqlstore does) gets the connected-apps endpoints, and the token
// service records the apps' use at every token it issues; without it the
// endpoints answer 500 and nothing is recorded.
type ConnectedAppStore interface {
	// OrganizationApps lists the apps the organization registered.
	OrganizationApps(ctx context.Context, organizationID string) ([]*App, error)
	// OrganizationGrants lists the consents given in the organization,
	// oldest first.
	OrganizationGrants(ctx context.Context, organizationID string) ([]Grant, error)
	// AppUses returns, by client id, when a token of each app was last
	// issued for the organization.
	AppUses(ctx context.Context, organizationID string) (map[string]time.Time, error)
	// RecordAppUse records that a token of the app was issued for the
	// organization at at; a time earlier than the one recorded is ignored.
	RecordAppUse(ctx context.Context, clientID, organizationID string, at time.Time) error
	// LastCutOffs returns, by client id, when each app was last cut off
	// from the organization.
	LastCutOffs(ctx context.Context, organizationID string) (map[string]time.Time, error)
	// DisconnectApp, in one transaction, records the cut-off of the app
	// from the organization at at, deletes the consents to the app in the
	// organization and the app's unredeemed authorization codes there,
	// and revokes every refresh token family of the app in the
	// organization. It returns how many families it revoked (families
	// revoked before do not count) and how many consents it deleted.
	DisconnectApp(ctx context.Context, clientID, organizationID string, at time.Time) (families, grants int, err error)
	// CutOffs lists the cut-offs recorded at or after since: it is the
	// bearer.CutOffSource of the verifiers' deny lists.
	CutOffs(ctx context.Context, since time.Time) ([]bearer.CutOff, error)
}

// ConnectedApp is an entry of the connected apps of an organization.
type ConnectedApp struct {
	ClientID string `json:"client_id"`
	// Name is the app's name; "" if the app no longer exists.
	Name string `json:"name"`
	// Kind is KindClientCredentials or KindAuthorizationCode.
	Kind string `json:"kind"`
	// Scopes are the app's scopes (client credentials), or the scopes the
	// users consented to, each user's latest consent (authorization code).
	Scopes []string `json:"scopes"`
	// BranchIDs are the branches of a client-credentials app; nil, every
	// branch of the organization, for an authorization-code app.
	BranchIDs []string `json:"branch_ids"`
	// ConsentedBy are the users who consented, in the order of their first
	// consent; empty for a client-credentials app.
	ConsentedBy []string `json:"consented_by"`
	// CreatedAt is when the organization registered the app (client
	// credentials), or when a user first consented (authorization code).
	CreatedAt time.Time `json:"created_at"`
	// ConsentedAt is when a user last consented (authorization code); nil
	// for a client-credentials app.
	ConsentedAt *time.Time `json:"consented_at"`
	// LastUsedAt is when a token of the app was last issued or refreshed
	// for the organization, by any grant, to the minute; nil if never. It
	// is recorded at issuance (at most once a minute per server), not at
	// each API request: a token keeps working for up to its lifetime after
	// it.
	LastUsedAt *time.Time `json:"last_used_at"`
	// DisconnectedAt is when the app was last disconnected from the
	// organization, or nil. A client-credentials app listed with it stays
	// disabled until its secret is rotated after that time.
	DisconnectedAt *time.Time `json:"disconnected_at"`
}

// connectedAppStore returns the store's ConnectedAppStore, or a 500 error.
func (s *Server) connectedAppStore() (ConnectedAppStore, error) {
	cs, ok := s.Store.(ConnectedAppStore)
	if !ok {
		return nil, apierrors.Internal(errors.New("oauth: the store keeps no connected apps (it does not implement ConnectedAppStore)"))
	}
	return cs, nil
}

// ConnectedApps lists the apps with access to the organization, sorted by
// name, client id and kind: its client-credentials apps and the apps its
// users consented to. It never lists another organization's consents.
func (s *Server) ConnectedApps(ctx context.Context, organizationID string) ([]ConnectedApp, error) {
	cs, err := s.connectedAppStore()
	if err != nil {
		return nil, err
	}
	apps, err := cs.OrganizationApps(ctx, organizationID)
	if err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: list the organization's apps: %w", err))
	}
	grants, err := cs.OrganizationGrants(ctx, organizationID)
	if err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: list the organization's consents: %w", err))
	}
	uses, err := cs.AppUses(ctx, organizationID)
	if err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: list the apps' use: %w", err))
	}
	cutoffs, err := cs.LastCutOffs(ctx, organizationID)
	if err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: list the apps' cut-offs: %w", err))
	}
	timeOf := func(m map[string]time.Time, clientID string) *time.Time {
		if t, ok := m[clientID]; ok {
			return &t
		}
		return nil
	}
	out := []ConnectedApp{}
	names := map[string]string{}
	for _, a := range apps {
		names[a.ClientID] = a.Name
		out = append(out, ConnectedApp{
			ClientID: a.ClientID, Name: a.Name, Kind: KindClientCredentials, Scopes: nonNil(a.Scopes),
			BranchIDs: nonNil(a.BranchIDs), ConsentedBy: []string{}, CreatedAt: a.CreatedAt,
			LastUsedAt: timeOf(uses, a.ClientID), DisconnectedAt: timeOf(cutoffs, a.ClientID),
		})
	}
	consented := map[string]*ConnectedApp{}
	latest := map[[2]string][]string{} // the latest scopes by client and user
	var order []string
	for _, g := range grants {
		c := consented[g.ClientID]
		if c == nil {
			c = &ConnectedApp{ClientID: g.ClientID, Kind: KindAuthorizationCode, ConsentedBy: []string{}, CreatedAt: g.CreatedAt,
				LastUsedAt: timeOf(uses, g.ClientID), DisconnectedAt: timeOf(cutoffs, g.ClientID)}
			consented[g.ClientID] = c
			order = append(order, g.ClientID)
		}
		if !slices.Contains(c.ConsentedBy, g.UserID) {
			c.ConsentedBy = append(c.ConsentedBy, g.UserID)
		}
		at := g.CreatedAt
		c.ConsentedAt = &at
		latest[[2]string{g.ClientID, g.UserID}] = g.Scopes
	}
	for _, clientID := range order {
		c := consented[clientID]
		c.Scopes = []string{}
		for _, user := range c.ConsentedBy {
			for _, sc := range latest[[2]string{clientID, user}] {
				if !slices.Contains(c.Scopes, sc) {
					c.Scopes = append(c.Scopes, sc)
				}
			}
		}
		name, ok := names[clientID]
		if !ok {
			// A client of a metadata document is named as its document
			// says now (from the cache, or fetched); one whose document
			// cannot be used any more is listed without a name, as an app
			// that was deleted.
			app, err := s.lookupApp(ctx, clientID)
			switch {
			case err == nil:
				name = app.Name
			case !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrClientMetadataDocument):
				return nil, apierrors.Internal(fmt.Errorf("oauth: load app: %w", err))
			}
		}
		c.Name = name
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ConnectedApp) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Kind, b.Kind))
	})
	return out, nil
}

// Disconnection is what DisconnectApp answers.
type Disconnection struct {
	ClientID       string `json:"client_id"`
	OrganizationID string `json:"organization_id"`
	// DisconnectedAt is the cut-off: the app's access tokens for the
	// organization issued until then (to the second) are refused.
	DisconnectedAt time.Time `json:"disconnected_at"`
	// RevokedFamilies is how many refresh token families were revoked.
	RevokedFamilies int `json:"revoked_families"`
	// RemovedConsents is how many consent records were deleted.
	RemovedConsents int `json:"removed_consents"`
	// Disabled says whether the app is the organization's own and was
	// disabled: its secret replaced, until an admin rotates it.
	Disabled bool `json:"disabled"`
}

// DisconnectApp cuts the app off from the organization: it revokes the
// app's refresh token families in the organization, deletes the consents of
// the organization's users to it and records a cut-off, which makes the
// app's access tokens for the organization fail on every verifier that
// loads the cut-offs (bearer.CutOffList) at its next refresh. An app the
// organization registered is also disabled: its secret is replaced with one
// nobody knows, so it gets no new token until its secret is rotated. An app
// that is not connected to the organization is 404.
func (s *Server) DisconnectApp(ctx context.Context, organizationID, clientID string) (*Disconnection, error) {
	cs, err := s.connectedAppStore()
	if err != nil {
		return nil, err
	}
	connected, err := s.ConnectedApps(ctx, organizationID)
	if err != nil {
		return nil, err
	}
	own, found := false, false
	for _, c := range connected {
		if c.ClientID == clientID {
			found = true
			own = own || c.Kind == KindClientCredentials
		}
	}
	if !found {
		return nil, apierrors.NotFound("the app is not connected to the organization")
	}
	if own {
		// First, so that the app gets no token after the cut-off.
		if err := s.Store.SetSecretHash(ctx, clientID, hashSecret(NewSecret())); err != nil {
			return nil, apierrors.Internal(fmt.Errorf("oauth: disable app: %w", err))
		}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	families, grants, err := cs.DisconnectApp(s.withAudit(ctx, audit.AppDisconnected, organizationID, appTarget(clientID),
		map[string]any{"disabled": own}), clientID, organizationID, now)
	if err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: disconnect app: %w", err))
	}
	s.logger().InfoContext(ctx, "app disconnected from the organization", "client_id", clientID, "organization_id", organizationID,
		"revoked_families", families, "removed_consents", grants, "disabled", own)
	return &Disconnection{ClientID: clientID, OrganizationID: organizationID, DisconnectedAt: now,
		RevokedFamilies: families, RemovedConsents: grants, Disabled: own}, nil
}

// recordUse records that a token of the app was issued for the
// organization, when the store keeps connected apps. A failure is logged:
// it does not fail the grant.
func (s *Server) recordUse(ctx context.Context, clientID, organizationID string, at time.Time) {
	cs, ok := s.Store.(ConnectedAppStore)
	if !ok {
		return
	}
	if err := cs.RecordAppUse(ctx, clientID, organizationID, at); err != nil {
		s.logger().WarnContext(ctx, "record the use of an app", "client_id", clientID, "error", err.Error())
	}
}

// connectedAppsAdmin authenticates the product user token of r and checks
// that the user administers the organization of the path.
func (s *Server) connectedAppsAdmin(r *http.Request) (string, error) {
	user, err := s.productUser(r)
	if err != nil {
		return "", err
	}
	org := r.PathValue("organization_id")
	if err := s.requireAdmin(r, user, org); err != nil {
		return "", err
	}
	return org, nil
}

// handleConnectedApps lists an organization's connected apps: GET
// Paths.ConnectedApps with the product user token of an admin of the
// organization; the answer is {"data": [ConnectedApp...]}.
func (s *Server) handleConnectedApps(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	org, err := s.connectedAppsAdmin(r)
	if err != nil {
		return err
	}
	apps, err := s.ConnectedApps(r.Context(), org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data []ConnectedApp `json:"data"`
	}{apps})
	return nil
}

// handleDisconnectApp disconnects an app: DELETE
// Paths.ConnectedApps/{client_id} with the product user token of an admin
// of the organization; the answer is {"data": Disconnection}.
func (s *Server) handleDisconnectApp(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	org, err := s.connectedAppsAdmin(r)
	if err != nil {
		return err
	}
	user, _ := s.productUser(r) // connectedAppsAdmin checked it
	d, err := s.DisconnectApp(asUser(r, user.Subject), org, r.PathValue("client_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data *Disconnection `json:"data"`
	}{d})
	return nil
}

// oaConnectedApps describes the connected apps endpoints in d, with the
// errors of endpoints that take an admin's product user token.
func (s *Server) oaConnectedApps(d *openapi.Document, p Paths, userAuthErrors func(notFound, forbidden string) map[string]*openapi.Response, security []openapi.SecurityRequirement) {
	orgParam := &openapi.Parameter{Name: "organization_id", In: "path", Required: true, Description: "The organization's id.", Schema: &openapi.Schema{Type: "string", Format: "uuid"}}
	clientParam := &openapi.Parameter{Name: "client_id", In: "path", Required: true, Description: "The app's client id.", Schema: &openapi.Schema{Type: "string"}}
	stamp := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: []string{"string", "null"}, Format: "date-time", Description: description}
	}
	app := openapi.Object([]string{"client_id", "name", "kind", "scopes", "branch_ids", "consented_by", "created_at", "consented_at", "last_used_at", "disconnected_at"},
		openapi.Prop("client_id", openapi.String("The app's client id.")),
		openapi.Prop("name", openapi.String("The app's name.")),
		openapi.Prop("kind", &openapi.Schema{Type: "string", Enum: []any{KindClientCredentials, KindAuthorizationCode},
			Description: "`client_credentials`: an app the organization registered, which gets tokens for itself. `authorization_code`: an app users of the organization consented to, which acts for them. An app of both kinds has an entry of each."}),
		openapi.Prop("scopes", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, Description: "The app's scopes, or the scopes its users consented to (each user's latest consent)."}),
		openapi.Prop("branch_ids", &openapi.Schema{Type: []string{"array", "null"}, Items: &openapi.Schema{Type: "string", Format: "uuid"},
			Description: "The branches of a `client_credentials` app; null, every branch, for an `authorization_code` app."}),
		openapi.Prop("consented_by", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Format: "uuid"}, Description: "The users who consented; empty for `client_credentials`."}),
		openapi.Prop("created_at", &openapi.Schema{Type: "string", Format: "date-time", Description: "When the app was registered, or first consented to."}),
		openapi.Prop("consented_at", stamp("When a user last consented; null for `client_credentials`.")),
		openapi.Prop("last_used_at", stamp("When a token of the app was last issued or refreshed for the organization, by any grant; null if never. Recorded at issuance, not at each request.")),
		openapi.Prop("disconnected_at", stamp("When the app was last disconnected from the organization, or null.")))
	app.Description = "An app with access to the organization."
	d.Components.Schemas["ConnectedApp"] = app
	list := openapi.Object([]string{"data"}, openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef("ConnectedApp")}))
	list.Description = "The organization's connected apps, by name."
	d.Components.Schemas["ConnectedApps"] = list
	disconnection := openapi.Object([]string{"data"}, openapi.Prop("data", openapi.Object(
		[]string{"client_id", "organization_id", "disconnected_at", "revoked_families", "removed_consents", "disabled"},
		openapi.Prop("client_id", openapi.String("The app's client id.")),
		openapi.Prop("organization_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The organization."}),
		openapi.Prop("disconnected_at", &openapi.Schema{Type: "string", Format: "date-time", Description: "The cut-off: the app's access tokens for the organization issued until then are refused."}),
		openapi.Prop("revoked_families", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "How many authorizations (refresh token families) were revoked."}),
		openapi.Prop("removed_consents", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "How many consents were removed."}),
		openapi.Prop("disabled", &openapi.Schema{Type: "boolean", Description: "Whether the app is the organization's own and was disabled until its secret is rotated."}))))
	disconnection.Description = "A disconnection."
	d.Components.Schemas["Disconnection"] = disconnection

	listResponses := userAuthErrors("the user is no member of the organization (its existence is not revealed).", "the user is a member of the organization but not an admin.")
	listResponses["200"] = openapi.WithHeaders(&openapi.Response{Description: "The connected apps.", Content: openapi.JSON(openapi.SchemaRef("ConnectedApps"))}, "Cache-Control")
	d.Paths[p.ConnectedApps] = &openapi.PathItem{
		Parameters: []*openapi.Parameter{orgParam},
		Get: &openapi.Operation{
			Tags: []string{tagOAuth}, Summary: "List the apps connected to an organization", OperationID: "listConnectedApps",
			Description: "Lists every app with access to the organization: the apps it registered (`client_credentials`) and the apps its users consented to (`authorization_code`), " +
				"with their scopes, branches, who consented, when, and when a token of the app was last issued. Takes the product user token of an admin of the organization.",
			Responses: listResponses,
			Security:  security,
		},
	}
	disconnect := userAuthErrors("the user is no member of the organization, or the app is not connected to it.", "the user is a member of the organization but not an admin.")
	disconnect["200"] = openapi.WithHeaders(&openapi.Response{Description: "Disconnected.", Content: openapi.JSON(openapi.SchemaRef("Disconnection"))}, "Cache-Control")
	d.Paths[p.ConnectedApps+"/{client_id}"] = &openapi.PathItem{
		Parameters: []*openapi.Parameter{orgParam, clientParam},
		Delete: &openapi.Operation{
			Tags: []string{tagOAuth}, Summary: "Disconnect an app from an organization", OperationID: "disconnectApp",
			Description: "Cuts the app off from the organization: every refresh token of the app in the organization is revoked (refresh gives `invalid_grant`), " +
				"the consents of the organization's users are removed (the next authorization asks again), and the app's access tokens for the organization " +
				"issued until now fail with 401 `invalid_token` within seconds on every server. An app the organization registered is also disabled: " +
				"its secret is replaced, so it gets no new token until an admin rotates its secret. Takes the product user token of an admin of the organization.",
			Responses: disconnect,
			Security:  security,
		},
	}
}
