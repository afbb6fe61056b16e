package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook"
)

// Connected apps: the admin commands that list the apps with access to an
// organization and cut one off, and serve's deny list of cut-offs.
//
// A disconnection is recorded in the database; every serve process keeps
// the recent cut-offs in memory, reloaded every cutOffRefreshInterval, and
// the API refuses a token of a disconnected app for the organization
// issued until the cut-off, without a database lookup per request. So a
// disconnection through one replica, or through the admin command, takes
// effect on every replica within that interval.

// cutOffRefreshInterval is how often serve reloads the cut-offs.
const cutOffRefreshInterval = 2 * time.Second

// cutOffWindow is how far back serve loads cut-offs: the lifetime of an
// access token, and a minute for the clocks of the replicas.
const cutOffWindow = oauth.DefaultAccessTokenTTL + time.Minute

// newCutOffs returns the deny list of cut-offs of store, loaded once. Each
// cut-off it learns of also disables the webhook endpoints that act for
// the app in the organization (webhook.DisableAppEndpoints, once per
// cut-off whichever replica comes first), so that a disconnected app gets
// no more events pushed than it can pull.
func newCutOffs(ctx context.Context, store bearer.CutOffSource, db *sql.DB, d query.Dialect, logger *slog.Logger) (*bearer.CutOffList, error) {
	l := &bearer.CutOffList{Source: store, Window: cutOffWindow, OnCutOff: func(ctx context.Context, c bearer.CutOff) error {
		n, err := webhook.DisableAppEndpoints(ctx, db, d, c.OrganizationID, c.ClientID, c.At)
		if err != nil {
			return err
		}
		if n > 0 {
			logger.InfoContext(ctx, "disabled the webhook endpoints of an app disconnected from the organization",
				"client_id", c.ClientID, "organization_id", c.OrganizationID, "endpoints", n)
		}
		return nil
	}}
	if err := l.Refresh(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// startCutOffs reloads l every cutOffRefreshInterval until the returned
// function is called, which waits for the loop to end. A failure to load
// is logged, and the list loaded before stays.
func startCutOffs(ctx context.Context, l *bearer.CutOffList, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, cutOffRefreshInterval, func(err error) {
			logger.Error("reload the cut-offs of disconnected apps", "error", err.Error())
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// appConnected is "waybill admin app connected --org ORG".
type appConnected struct {
	org string
}

// flags declares --org.
func (c *appConnected) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization (required)")
}

// check requires --org, a UUID.
func (c *appConnected) check() error {
	var err error
	c.org, err = parseOrgID(c.org)
	return err
}

// exec prints one line per connected app, an oauth.ConnectedApp: the apps
// the organization registered and the apps its users consented to.
func (c *appConnected) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	apps, err := adminOAuthServer(db, d).ConnectedApps(ctx, c.org)
	if err != nil {
		return nil, err
	}
	out := jsonLines{}
	for _, a := range apps {
		out = append(out, a)
	}
	return out, nil
}

// appDisconnect is "waybill admin app disconnect --org ORG --client-id ID".
type appDisconnect struct {
	org, clientID string
}

// flags declares --org and --client-id.
func (c *appDisconnect) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization (required)")
	fs.StringVar(&c.clientID, "client-id", "", "client `id` of the app to cut off (required)")
}

// check requires --org, a UUID, and --client-id.
func (c *appDisconnect) check() error {
	var err error
	if c.org, err = parseOrgID(c.org); err != nil {
		return err
	}
	if c.clientID = strings.TrimSpace(c.clientID); c.clientID == "" {
		return errors.New("--client-id is required")
	}
	return nil
}

// disconnection is what "admin app disconnect" prints: the
// oauth.Disconnection and how many webhook endpoints of the app it
// disabled.
type disconnection struct {
	*oauth.Disconnection
	DisabledWebhookEndpoints int `json:"disabled_webhook_endpoints"`
}

// exec cuts the app off from the organization (see oauth.Server.DisconnectApp),
// disables the webhook endpoints that act for the app in it, and prints a
// disconnection. The running servers refuse the app's tokens within
// cutOffRefreshInterval.
func (c *appDisconnect) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	dc, err := adminOAuthServer(db, d).DisconnectApp(ctx, c.org, c.clientID)
	if err != nil {
		return nil, err
	}
	n, err := webhook.DisableAppEndpoints(ctx, db, d, c.org, c.clientID, dc.DisconnectedAt)
	if err != nil {
		// The running servers disable them when they load the cut-off.
		return nil, fmt.Errorf("the app is disconnected, but its webhook endpoints were not disabled: %w", err)
	}
	return disconnection{Disconnection: dc, DisabledWebhookEndpoints: n}, nil
}
