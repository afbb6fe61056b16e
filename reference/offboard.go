package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// Offboarding: the admin commands that end a user's access. Each ends the
// membership (or the user) and then revokes the user's refresh token
// families through oauth.Server.Offboard, which keeps that order so that
// no token escapes. A family that an interrupted command left unrevoked is
// revoked by the next refresh, which checks the membership, or by running
// the command again.

// offboarder runs oauth's offboarding rule on the token store of db.
func offboarder(db *sql.DB, d query.Dialect) *oauth.Server {
	return &oauth.Server{Store: newOAuthStore(db, d)}
}

// userRemove is "waybill admin user remove --id USER --org ORG": the user
// leaves the organization.
type userRemove struct {
	id, org string
}

// userRemoved is the output of user remove.
type userRemoved struct {
	ID             string `json:"id"`
	OrganizationID string `json:"organization_id"`
	// RevokedFamilies counts the refresh token families revoked: one per
	// live authorization of an app by the user in the organization.
	RevokedFamilies int `json:"revoked_families"`
}

// flags declares --id and --org.
func (c *userRemove) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.id, "id", "", "`id` of the user (required)")
	fs.StringVar(&c.org, "org", "", "`id` of the organization the user leaves (required)")
}

// check requires --id and --org, each a UUID.
func (c *userRemove) check() error {
	id, err := parseUserID(c.id)
	if err != nil {
		return err
	}
	c.id = id
	c.org, err = parseOrgID(c.org)
	return err
}

// exec ends the membership, then revokes the user's families in the
// organization. A user who is not a member and has no family to revoke
// there is an error; one who is not a member any more but still has
// families (the membership ended some other way, or a first run was
// interrupted) has them revoked.
func (c *userRemove) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	if err := requireOrganization(ctx, db, c.org); err != nil {
		return nil, err
	}
	var removed int64
	revoked, err := offboarder(db, d).Offboard(ctx, c.id, c.org, func(ctx context.Context) error {
		return inTx(ctx, db, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, "DELETE FROM memberships WHERE user_id = $1 AND organization_id = $2", c.id, c.org)
			if err != nil {
				return fmt.Errorf("delete membership: %w", err)
			}
			if removed, err = res.RowsAffected(); err != nil {
				return fmt.Errorf("delete membership: %w", err)
			}
			if removed == 0 {
				return nil
			}
			return appendAudit(ctx, tx, d, c.org, audit.MemberRemoved, userTarget(c.id), nil)
		})
	})
	if err != nil {
		return nil, err
	}
	if removed == 0 && revoked == 0 {
		return nil, fmt.Errorf("user %s is not a member of organization %s", c.id, c.org)
	}
	return userRemoved{ID: c.id, OrganizationID: c.org, RevokedFamilies: revoked}, nil
}

// userDelete is "waybill admin user delete --id USER": the user and every
// membership of theirs are deleted.
type userDelete struct {
	id string
}

// userDeleted is the output of user delete.
type userDeleted struct {
	ID string `json:"id"`
	// OrganizationIDs are the organizations the user belonged to.
	OrganizationIDs []string `json:"organization_ids"`
	// RevokedFamilies counts the refresh token families revoked, in every
	// organization.
	RevokedFamilies int `json:"revoked_families"`
}

// flags declares --id.
func (c *userDelete) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.id, "id", "", "`id` of the user (required)")
}

// check requires --id, a UUID.
func (c *userDelete) check() error {
	id, err := parseUserID(c.id)
	c.id = id
	return err
}

// exec deletes the user and their memberships in one transaction, then
// revokes the user's families in every organization. An unknown user with
// no family to revoke is an error.
func (c *userDelete) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	orgs := []string{}
	var deleted int64
	revoked, err := offboarder(db, d).Offboard(ctx, c.id, "", func(ctx context.Context) error {
		return inTx(ctx, db, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, "SELECT organization_id FROM memberships WHERE user_id = $1", c.id)
			if err != nil {
				return fmt.Errorf("list memberships: %w", err)
			}
			defer func() { _ = rows.Close() }()
			for rows.Next() {
				var org string
				if err := rows.Scan(&org); err != nil {
					return fmt.Errorf("list memberships: %w", err)
				}
				orgs = append(orgs, org)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("list memberships: %w", err)
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM memberships WHERE user_id = $1", c.id); err != nil {
				return fmt.Errorf("delete memberships: %w", err)
			}
			res, err := tx.ExecContext(ctx, "DELETE FROM users WHERE id = $1", c.id)
			if err != nil {
				return fmt.Errorf("delete user: %w", err)
			}
			deleted, err = res.RowsAffected()
			if err != nil {
				return fmt.Errorf("delete user: %w", err)
			}
			if deleted == 0 {
				return nil
			}
			for _, org := range orgs {
				if err := appendAudit(ctx, tx, d, org, audit.UserDeleted, userTarget(c.id), nil); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if deleted == 0 && revoked == 0 {
		return nil, fmt.Errorf("user %s not found", c.id)
	}
	slices.Sort(orgs)
	return userDeleted{ID: c.id, OrganizationIDs: orgs, RevokedFamilies: revoked}, nil
}

// parseUserID returns the canonical form of the user id given to --id.
func parseUserID(s string) (string, error) {
	if s == "" {
		return "", errors.New("--id is required")
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--id %q is not a user id (a UUID)", s)
	}
	return id.String(), nil
}
