package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/password"
)

// errBadCredentials is the error of Authenticate for an unknown email or a
// wrong password; the two are not told apart.
var errBadCredentials = oauth.ErrBadCredentials

// directory answers the token service's questions about users,
// organizations and branches from the tenancy tables.
type directory struct {
	db *sql.DB
	// hashes bounds the password hashes that sign-ins compute at once.
	hashes *password.Pool
	// logger receives the warnings of sign-ins; nil means slog.Default.
	logger *slog.Logger
}

func (d *directory) log() *slog.Logger {
	if d.logger != nil {
		return d.logger
	}
	return slog.Default()
}

// passwordHashes bounds the password hashes of the whole process: one per
// core (GOMAXPROCS), password.DefaultQueuePerSlot more waiting per core for
// at most password.DefaultWait; a sign-in that gets no slot is answered
// 503 temporarily_unavailable with Retry-After.
var passwordHashes = password.NewPool(password.PoolOptions{})

// newDirectory returns a directory over db, which migrateDB has migrated,
// that shares the process's bound on password hashes.
func newDirectory(db *sql.DB) *directory {
	return &directory{db: db, hashes: passwordHashes}
}

// Authenticate returns the user with email (compared case-insensitively)
// when password is theirs. An unknown email or a wrong password gives an
// error that is errBadCredentials; for an unknown email the password is
// verified against a dummy hash, so that the time taken does not reveal
// which emails exist (password.Pool.VerifyUnknown). Every hash waits for
// a slot of d.hashes: a sign-in that gets none in time fails with a 503
// temporarily_unavailable. A password whose hash was written at another cost than the
// default is hashed again at the default cost once it verified, and the
// new hash stored.
func (d *directory) Authenticate(ctx context.Context, email, pass string) (oauth.User, error) {
	u := oauth.User{}
	var hash string
	err := d.db.QueryRowContext(ctx,
		"SELECT id, email, password_hash FROM users WHERE email = $1",
		normalizeEmail(email)).Scan(&u.ID, &u.Email, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		if err := d.hashes.VerifyUnknown(ctx, pass); err != nil {
			return oauth.User{}, err
		}
		return oauth.User{}, errBadCredentials
	}
	if err != nil {
		return oauth.User{}, fmt.Errorf("authenticate: %w", err)
	}
	ok, rehash, err := d.hashes.Verify(ctx, hash, pass)
	if apierrors.HasCode(err, apierrors.CodeUnavailable) {
		return oauth.User{}, err
	}
	if err != nil {
		return oauth.User{}, fmt.Errorf("authenticate user %s: %w", u.ID, err)
	}
	if !ok {
		return oauth.User{}, errBadCredentials
	}
	if rehash != "" {
		// Only if the hash is still the one verified: a password changed
		// meanwhile stays changed. A failure only delays the rehash to the
		// next sign-in.
		if _, err := d.db.ExecContext(ctx, "UPDATE users SET password_hash = $1 WHERE id = $2 AND password_hash = $3", rehash, u.ID, hash); err != nil {
			d.log().WarnContext(ctx, "password rehash not stored; the next sign-in tries again", "user_id", u.ID, "error", err.Error())
		}
	}
	return u, nil
}

// User returns the user with userID for the claims of OpenID Connect (it
// makes directory an oauth.UserLookup): the id and email. The users table
// keeps no name, and does not verify emails (an admin sets them), so Name
// is "" and EmailVerified nil, and the id token carries neither name nor
// email_verified. An unknown user, or a userID that is not a UUID, is
// oauth.ErrNotFound.
func (d *directory) User(ctx context.Context, userID string) (oauth.User, error) {
	id, err := uuid.Parse(userID)
	if err != nil {
		return oauth.User{}, fmt.Errorf("user: %w", oauth.ErrNotFound)
	}
	u := oauth.User{}
	err = d.db.QueryRowContext(ctx, "SELECT id, email FROM users WHERE id = $1", id.String()).Scan(&u.ID, &u.Email)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return oauth.User{}, fmt.Errorf("user: %w", oauth.ErrNotFound)
	case err != nil:
		return oauth.User{}, fmt.Errorf("user: %w", err)
	}
	return u, nil
}

// Memberships returns the organizations that the user with userID belongs
// to, ordered by name (then id, for organizations of one name). A userID
// that is not a UUID belongs to none.
func (d *directory) Memberships(ctx context.Context, userID string) ([]oauth.Membership, error) {
	out := []oauth.Membership{}
	id, err := uuid.Parse(userID)
	if err != nil {
		return out, nil
	}
	rows, err := d.db.QueryContext(ctx, `
		SELECT m.organization_id, o.name, m.admin
		FROM memberships m JOIN organizations o ON o.id = m.organization_id
		WHERE m.user_id = $1`, id.String())
	if err != nil {
		return nil, fmt.Errorf("memberships: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var m oauth.Membership
		if err := rows.Scan(&m.OrganizationID, &m.Name, &m.Admin); err != nil {
			return nil, fmt.Errorf("memberships: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memberships: %w", err)
	}
	// Sorted here rather than by ORDER BY, whose collation differs between
	// PostgreSQL and SQLite.
	slices.SortFunc(out, func(a, b oauth.Membership) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.OrganizationID, b.OrganizationID))
	})
	return out, nil
}

// Branches returns the ids of the branches of the organization with
// organizationID, in ascending order. An organizationID that is not a UUID
// has none.
func (d *directory) Branches(ctx context.Context, organizationID string) ([]string, error) {
	ids := []string{}
	id, err := uuid.Parse(organizationID)
	if err != nil {
		return ids, nil
	}
	// Canonical uuids order the same as uuid values and as text, so ORDER BY
	// agrees between PostgreSQL and SQLite.
	rows, err := d.db.QueryContext(ctx,
		"SELECT id FROM branches WHERE organization_id = $1 ORDER BY id", id.String())
	if err != nil {
		return nil, fmt.Errorf("branches: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("branches: %w", err)
		}
		ids = append(ids, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("branches: %w", err)
	}
	return ids, nil
}

// normalizeEmail returns email as the users table keeps it: without
// surrounding space, in lower case.
func normalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}
