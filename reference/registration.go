package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// registrationTokenCreate is "waybill admin registration-token create
// [--expires 24h]": an initial access token of Dynamic Client
// Registration, for a server that runs with --registration token.
type registrationTokenCreate struct {
	expires time.Duration
}

// registrationToken is the output of registration-token create.
type registrationToken struct {
	// Token is shown this once; the database keeps its SHA-256.
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// flags declares --expires.
func (c *registrationTokenCreate) flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.expires, "expires", oauth.DefaultInitialAccessTokenTTL, "how long the token lets its holder register clients (as many as they like) at POST /auth/v1/oauth/register")
}

// check requires a positive lifetime.
func (c *registrationTokenCreate) check() error {
	if c.expires <= 0 {
		return errors.New("--expires must be positive, such as 24h")
	}
	return nil
}

// exec makes the token.
func (c *registrationTokenCreate) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	token, expires, err := adminOAuthServer(db, d).CreateInitialAccessToken(ctx, c.expires)
	if err != nil {
		return nil, err
	}
	return registrationToken{Token: token, ExpiresAt: expires}, nil
}
