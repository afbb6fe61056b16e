package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/waybillhq/waybill/oauth/password"
	"github.com/waybillhq/waybill/query"
)

// The list commands of "waybill admin" print one JSON object a line, in a
// stable order (by name, then id), so that their output can be piped to jq
// or diffed.

// orgList is "waybill admin org list".
type orgList struct{}

func (c *orgList) flags(*flag.FlagSet) {}
func (c *orgList) check() error        { return nil }

// exec lists every organization.
func (c *orgList) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	type org struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	return queryLines(ctx, db, "SELECT id, name FROM organizations ORDER BY name, id", nil, func(rows *sql.Rows) (any, error) {
		var o org
		return o, rows.Scan(&o.ID, &o.Name)
	})
}

// orgFlag is the --org flag of the list commands: the organization whose
// records are listed.
type orgFlag struct {
	org string
}

// flags declares --org.
func (c *orgFlag) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.org, "org", "", "`id` of the organization (required)")
}

// check requires --org, a UUID.
func (c *orgFlag) check() error {
	org, err := parseOrgID(c.org)
	c.org = org
	return err
}

// branchList is "waybill admin branch list --org ORG".
type branchList struct{ orgFlag }

// exec lists the branches of the organization.
func (c *branchList) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	type branch struct {
		ID             string `json:"id"`
		OrganizationID string `json:"organization_id"`
		Name           string `json:"name"`
	}
	return queryLines(ctx, db, "SELECT id, organization_id, name FROM branches WHERE organization_id = $1 ORDER BY name, id",
		[]any{c.org}, func(rows *sql.Rows) (any, error) {
			var b branch
			return b, rows.Scan(&b.ID, &b.OrganizationID, &b.Name)
		})
}

// userList is "waybill admin user list --org ORG".
type userList struct{ orgFlag }

// exec lists the members of the organization; never their password hashes.
func (c *userList) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	type user struct {
		ID             string `json:"id"`
		Email          string `json:"email"`
		OrganizationID string `json:"organization_id"`
		Admin          bool   `json:"admin"`
	}
	return queryLines(ctx, db, `SELECT u.id, u.email, m.organization_id, m.admin FROM users u
		JOIN memberships m ON m.user_id = u.id WHERE m.organization_id = $1 ORDER BY u.email, u.id`,
		[]any{c.org}, func(rows *sql.Rows) (any, error) {
			var u user
			return u, rows.Scan(&u.ID, &u.Email, &u.OrganizationID, &u.Admin)
		})
}

// appList is "waybill admin app list --org ORG".
type appList struct{ orgFlag }

// listedApp is a line of "waybill admin app list": an app without its
// secret, which is never shown again after its creation or rotation.
type listedApp struct {
	ClientID       string   `json:"client_id"`
	AppID          string   `json:"app_id"`
	Name           string   `json:"name"`
	OrganizationID string   `json:"organization_id"`
	Scopes         []string `json:"scopes"`
	BranchIDs      []string `json:"branch_ids"`
	RedirectURIs   []string `json:"redirect_uris"`
}

// exec lists the apps the organization registered, read through the token
// service's store.
func (c *appList) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	ids, err := queryLines(ctx, db, "SELECT client_id FROM oauth_apps WHERE organization_id = $1 ORDER BY name, client_id",
		[]any{c.org}, func(rows *sql.Rows) (any, error) {
			var id string
			return id, rows.Scan(&id)
		})
	if err != nil {
		return nil, err
	}
	store := newOAuthStore(db, d)
	var out jsonLines
	for _, id := range ids {
		app, err := store.App(ctx, id.(string))
		if err != nil {
			return nil, fmt.Errorf("read app %s: %w", id, err)
		}
		out = append(out, listedApp{ClientID: app.ClientID, AppID: app.ID, Name: app.Name, OrganizationID: app.OrganizationID,
			Scopes: nonNilStrings(app.Scopes), BranchIDs: nonNilStrings(app.BranchIDs), RedirectURIs: nonNilStrings(app.RedirectURIs)})
	}
	return out, nil
}

// nonNilStrings returns s, or an empty slice for nil, so that JSON says []
// rather than null.
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// queryLines runs query with args on db and returns one line per row, as
// scan reads it.
func queryLines(ctx context.Context, db *sql.DB, query string, args []any, scan func(*sql.Rows) (any, error)) (jsonLines, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := jsonLines{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// userSetPassword is "waybill admin user set-password (--id USER | --email
// E) --password P".
type userSetPassword struct {
	id, email, password string
}

// flags declares --id, --email and --password.
func (c *userSetPassword) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.id, "id", "", "`id` of the user (or --email)")
	fs.StringVar(&c.email, "email", "", "`email` of the user (or --id)")
	fs.StringVar(&c.password, "password", "", "the new `password`, at least 8 characters (required)")
}

// check requires exactly one of --id and --email, and a password of
// minPasswordLen characters.
func (c *userSetPassword) check() error {
	c.email = normalizeEmail(c.email)
	switch {
	case (c.id == "") == (c.email == ""):
		return errors.New("give the user by --id or by --email, one of them")
	case c.password == "":
		return errors.New("--password is required")
	case utf8.RuneCountInString(c.password) < minPasswordLen:
		return fmt.Errorf("--password must have at least %d characters", minPasswordLen)
	}
	if c.id != "" {
		id, err := parseUserID(c.id)
		if err != nil {
			return err
		}
		c.id = id
	}
	return nil
}

// exec stores the hash of the new password. The user's sessions of the
// consent pages and their tokens are not touched: a new password is no
// offboarding (see user remove and user delete).
func (c *userSetPassword) exec(ctx context.Context, db *sql.DB, _ query.Dialect) (any, error) {
	hash, err := password.Hash(c.password)
	if err != nil {
		return nil, err
	}
	where, arg := "id = $2", c.id
	if c.email != "" {
		where, arg = "email = $2", c.email
	}
	var id string
	err = db.QueryRowContext(ctx, "UPDATE users SET password_hash = $1 WHERE "+where+" RETURNING id", hash, arg).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no user %s", strings.TrimSpace(c.id+c.email))
	}
	if err != nil {
		return nil, fmt.Errorf("set password: %w", err)
	}
	return created{ID: id}, nil
}
