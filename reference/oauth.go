package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/sqlstore"
)

// newOAuthStore returns the token service's store on the reference
// database; its tables live beside the reference server's own.
func newOAuthStore(db *sql.DB, d migrate.Dialect) *sqlstore.Store {
	if d == migrate.Postgres {
		return sqlstore.New(db, sqlstore.Postgres)
	}
	return sqlstore.New(db, sqlstore.SQLite)
}

// signingKeys returns the keys that sign and verify tokens. With
// --jwt-secret the raw secret is the key, and --jwt-previous-secret, while
// set, still verifies the tokens the secret before it signed. Without them
// the key is generated once and kept in the database, so replicas that share
// the database share the key. A key's kid is derived from the key, so every
// replica names it alike.
func signingKeys(ctx context.Context, store *sqlstore.Store, secret, previous string) (*oauth.KeySet, error) {
	if secret == "" {
		if previous != "" {
			return nil, errors.New("--jwt-previous-secret needs --jwt-secret")
		}
		key, err := store.SigningKey(ctx)
		if err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		return oauth.NewKeySet(key)
	}
	keys := []oauth.Key{oauth.SecretKey([]byte(secret))}
	if previous != "" {
		keys = append(keys, oauth.SecretKey([]byte(previous)))
	}
	for _, k := range keys {
		if len(k.Secret) < oauth.MinKeyLength {
			return nil, fmt.Errorf("a JWT secret must be at least %d bytes", oauth.MinKeyLength)
		}
	}
	return oauth.NewKeySet(keys[0], keys[1:]...)
}

// newOAuthServer returns the token service of the reference server.
func newOAuthServer(db *sql.DB, store *sqlstore.Store, keys *oauth.KeySet, issuer string) *oauth.Server {
	return &oauth.Server{
		Issuer:        issuer,
		Keys:          keys,
		Store:         store,
		Directory:     newDirectory(db),
		SecureCookies: strings.HasPrefix(issuer, "https://"),
	}
}

// appCreate is "waybill admin app create --org ORG --name NAME --scopes
// "s1 s2" [--branches B1,B2] [--redirect-uri URI ...]".
type appCreate struct {
	org, name, scopes, branches string
	redirectURIs                stringList
}

// flags declares the app's flags.
func (c *appCreate) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization that owns the app (required)")
	fs.StringVar(&c.name, "name", "", "`name` of the app, shown on the consent page (required)")
	fs.StringVar(&c.scopes, "scopes", "", "space-separated `scopes` the app may be granted (required)")
	fs.StringVar(&c.branches, "branches", "", "comma-separated branch `ids` its client-credentials tokens may use (none when empty)")
	fs.Var(&c.redirectURIs, "redirect-uri", "exact redirect `URI` of its authorization-code flow (repeatable)")
}

// check requires --org, --name and --scopes.
func (c *appCreate) check() error {
	org, err := parseOrgID(c.org)
	if err != nil {
		return err
	}
	c.org = org
	switch {
	case strings.TrimSpace(c.name) == "":
		return errors.New("--name is required")
	case len(oauth.ParseScope(c.scopes)) == 0:
		return errors.New("--scopes is required")
	}
	return nil
}

// exec registers the app and prints its client secret, this once.
func (c *appCreate) exec(ctx context.Context, db *sql.DB, d migrate.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	var branches []string
	for b := range strings.SplitSeq(c.branches, ",") {
		if b = strings.TrimSpace(b); b != "" {
			branches = append(branches, strings.ToLower(b))
		}
	}
	srv := newOAuthServer(db, newOAuthStore(db, d), nil, "")
	app, secret, err := srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: c.org, Name: c.name, Scopes: oauth.ParseScope(c.scopes),
		BranchIDs: branches, RedirectURIs: c.redirectURIs,
	})
	if err != nil {
		return nil, err
	}
	return oauth.NewAppResponse(app, secret), nil
}

// appRotateSecret is "waybill admin app rotate-secret --client-id ID".
type appRotateSecret struct {
	clientID string
}

// flags declares --client-id.
func (c *appRotateSecret) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.clientID, "client-id", "", "client `id` of the app (required)")
}

// check requires --client-id.
func (c *appRotateSecret) check() error {
	if c.clientID = strings.TrimSpace(c.clientID); c.clientID == "" {
		return errors.New("--client-id is required")
	}
	return nil
}

// exec gives the app a new secret; the old one stops working at once.
func (c *appRotateSecret) exec(ctx context.Context, db *sql.DB, d migrate.Dialect) (any, error) {
	srv := newOAuthServer(db, newOAuthStore(db, d), nil, "")
	secret, err := srv.RotateSecret(ctx, c.clientID)
	if err != nil {
		return nil, err
	}
	return oauth.AppResponse{ClientID: c.clientID, ClientSecret: secret}, nil
}
