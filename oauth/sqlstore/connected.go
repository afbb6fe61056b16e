package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

var (
	_ oauth.ConnectedAppStore = (*Store)(nil)
	_ bearer.CutOffSource     = (*Store)(nil)
)

// OrganizationApps lists the apps the organization registered, oldest
// first. Their lists are never nil.
func (s *Store) OrganizationApps(ctx context.Context, organizationID string) ([]*oauth.App, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, client_id, name, scopes, branch_ids, redirect_uris, secret_hash, created_at, public,
			registration_token_hash, token_endpoint_auth_method
		FROM oauth_apps WHERE organization_id = $1 ORDER BY created_at, client_id`, organizationID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: organization apps: %w", err)
	}
	defer rows.Close()
	out := []*oauth.App{}
	for rows.Next() {
		a := &oauth.App{OrganizationID: organizationID}
		var created nullTime
		if err := rows.Scan(&a.ID, &a.ClientID, &a.Name, list{&a.Scopes}, list{&a.BranchIDs}, list{&a.RedirectURIs}, &a.SecretHash, &created, &a.Public,
			&a.RegistrationTokenHash, &a.TokenEndpointAuthMethod); err != nil {
			return nil, fmt.Errorf("sqlstore: organization apps: %w", err)
		}
		a.CreatedAt = created.Time
		out = append(out, a)
	}
	return out, rows.Err()
}

// OrganizationGrants lists the consents given in the organization, oldest
// first.
func (s *Store) OrganizationGrants(ctx context.Context, organizationID string) ([]oauth.Grant, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT client_id, user_id, scopes, created_at FROM oauth_grants
		WHERE organization_id = $1 ORDER BY created_at, id`, organizationID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: organization grants: %w", err)
	}
	defer rows.Close()
	out := []oauth.Grant{}
	for rows.Next() {
		g := oauth.Grant{OrganizationID: organizationID}
		var created nullTime
		if err := rows.Scan(&g.ClientID, &g.UserID, list{&g.Scopes}, &created); err != nil {
			return nil, fmt.Errorf("sqlstore: organization grants: %w", err)
		}
		g.CreatedAt = created.Time
		out = append(out, g)
	}
	return out, rows.Err()
}

// AppUses returns, by client id, when a token of each app was last issued
// for the organization.
func (s *Store) AppUses(ctx context.Context, organizationID string) (map[string]time.Time, error) {
	return s.timesByClient(ctx, `SELECT client_id, last_used_at FROM oauth_app_uses WHERE organization_id = $1`, organizationID)
}

// LastCutOffs returns, by client id, when each app was last cut off from
// the organization.
func (s *Store) LastCutOffs(ctx context.Context, organizationID string) (map[string]time.Time, error) {
	return s.timesByClient(ctx, `SELECT client_id, max(at) FROM oauth_cutoffs WHERE organization_id = $1 GROUP BY client_id`, organizationID)
}

// timesByClient runs query, which selects a client id and a time, for the
// organization.
func (s *Store) timesByClient(ctx context.Context, query, organizationID string) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, query, organizationID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at nullTime
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("sqlstore: %w", err)
		}
		out[id] = at.Time
	}
	return out, rows.Err()
}

// useGranularity is how precise last_used_at is: a Store writes the use
// of an app in an organization at most once in this long, so that issuing
// tokens is not a write of one row per token, which the many clients of
// one app would wait for one after another.
const useGranularity = time.Minute

// useLog remembers when a Store last wrote each app's use in each
// organization.
type useLog struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
}

// due reports whether the use of clientID in organizationID at at is to
// be written, and if so notes it.
func (u *useLog) due(clientID, organizationID string, at time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil {
		u.last = map[[2]string]time.Time{}
	}
	key := [2]string{clientID, organizationID}
	if prev, ok := u.last[key]; ok && at.Sub(prev) >= 0 && at.Sub(prev) < useGranularity {
		return false
	}
	if len(u.last) >= 100_000 { // a bound on memory: forgetting costs one write
		clear(u.last)
	}
	u.last[key] = at
	return true
}

// RecordAppUse records that a token of the app was issued for the
// organization at at, in one upsert; an earlier time than the one recorded
// is ignored, and so is a use within useGranularity (a minute) of the last
// one this Store wrote: last_used_at is to the minute.
func (s *Store) RecordAppUse(ctx context.Context, clientID, organizationID string, at time.Time) error {
	if s.uses != nil && !s.uses.due(clientID, organizationID, at) {
		return nil
	}
	tx := s.autocommit()
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_app_uses (organization_id, client_id, last_used_at) VALUES ($1, $2, $3)
		ON CONFLICT (organization_id, client_id) DO UPDATE SET last_used_at = excluded.last_used_at
		WHERE oauth_app_uses.last_used_at < excluded.last_used_at`,
		organizationID, clientID, tx.timeArg(at))
	if err != nil {
		return fmt.Errorf("sqlstore: record app use: %w", err)
	}
	return nil
}

// DisconnectApp records the cut-off of the app from the organization at
// at, deletes the consents to the app in the organization and its
// authorization codes there not redeemed yet, and revokes
// every unrevoked refresh token family of the app in the organization, in
// one transaction. It returns how many families it revoked and how many
// consents it deleted.
func (s *Store) DisconnectApp(ctx context.Context, clientID, organizationID string, at time.Time) (families, grants int, err error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer tx.rollback(ctx)
	if _, err := tx.ExecContext(ctx, `INSERT INTO oauth_cutoffs (organization_id, client_id, at) VALUES ($1, $2, $3)`,
		organizationID, clientID, tx.timeArg(at)); err != nil {
		return 0, 0, fmt.Errorf("sqlstore: record cut-off: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM oauth_grants WHERE organization_id = $1 AND client_id = $2`, organizationID, clientID)
	if grants, err = affected(res, err); err != nil {
		return 0, 0, fmt.Errorf("sqlstore: delete consents: %w", err)
	}
	// Codes issued before and not redeemed yet would begin new families.
	if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_codes WHERE organization_id = $1 AND client_id = $2 AND used_at IS NULL`,
		organizationID, clientID); err != nil {
		return 0, 0, fmt.Errorf("sqlstore: delete unused codes: %w", err)
	}
	res, err = tx.ExecContext(ctx, `UPDATE oauth_families SET revoked_at = $1
		WHERE organization_id = $2 AND client_id = $3 AND revoked_at IS NULL`, tx.timeArg(at), organizationID, clientID)
	if families, err = affected(res, err); err != nil {
		return 0, 0, fmt.Errorf("sqlstore: revoke families: %w", err)
	}
	if e := oauth.AuditEntry(ctx); e != nil {
		if e.Details == nil {
			e.Details = map[string]any{}
		}
		e.Details["revoked_families"], e.Details["removed_consents"] = families, grants
		if err := auditdb.Append(ctx, tx, s.dialect, e); err != nil {
			return 0, 0, fmt.Errorf("sqlstore: %w", err)
		}
	}
	if err := tx.commit(ctx); err != nil {
		return 0, 0, err
	}
	return families, grants, nil
}

// affected returns the rows a statement affected.
func affected(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// CutOffs lists the cut-offs recorded at or after since, the source of a
// bearer.CutOffList.
func (s *Store) CutOffs(ctx context.Context, since time.Time) ([]bearer.CutOff, error) {
	tx := s.autocommit()
	rows, err := tx.QueryContext(ctx, `SELECT organization_id, client_id, at FROM oauth_cutoffs WHERE at >= $1`, tx.timeArg(since))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: cut-offs: %w", err)
	}
	defer rows.Close()
	out := []bearer.CutOff{}
	for rows.Next() {
		var c bearer.CutOff
		var at nullTime
		if err := rows.Scan(&c.OrganizationID, &c.ClientID, &at); err != nil {
			return nil, fmt.Errorf("sqlstore: cut-offs: %w", err)
		}
		c.At = at.Time
		out = append(out, c)
	}
	return out, rows.Err()
}
