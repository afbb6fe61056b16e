package sqlstore

import (
	"context"
	"fmt"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// defaultPurgeBatch is how many rows one statement of Purge deletes at
// most: few enough that each statement holds its locks (on SQLite, the
// database's write lock) for milliseconds, many enough that a backlog of
// millions goes in a few thousand statements.
const defaultPurgeBatch = 1000

var _ oauth.Purger = (*Store)(nil)

// Purge deletes what ended before before (see oauth.Purger), in this
// order: the refresh tokens that expired, the tokens of the families that
// ended; the codes never redeemed that expired, the codes redeemed before
// before.Authorized; the families that ended, once they have no token
// left; the grants given before before.Authorized.
//
// Each statement runs on its own, outside any transaction, and deletes at
// most a batch of rows (see WithPurgeBatch) chosen by a subquery; Purge
// repeats it until a batch comes back short. It keeps no session state, so
// it works through a transaction-pooling PgBouncer. On PostgreSQL the
// subquery locks the rows it picks with FOR UPDATE SKIP LOCKED: purges
// running at once on several replicas share the work instead of waiting
// for each other, and a row that a token rotation holds is left for the
// next purge. A family is deleted only when no token of it is left, so
// that a token saved in it meanwhile is never left without its revocation.
func (s *Store) Purge(ctx context.Context, before oauth.PurgeBefore) (oauth.PurgeResult, error) {
	batch := defaultPurgeBatch
	if s.purgeBatch > 0 {
		batch = s.purgeBatch
	}
	return s.purge(ctx, before, batch)
}

// WithPurgeBatch returns a copy of s whose Purge deletes at most n rows
// per statement instead of 1000: fewer to hold each statement's locks for
// less time, more to clear a large backlog in fewer statements. An n below
// 1 keeps the default.
func (s *Store) WithPurgeBatch(n int) *Store {
	c := *s
	c.purgeBatch = n
	return &c
}

// purge is Purge with batches of batch rows.
func (s *Store) purge(ctx context.Context, before oauth.PurgeBefore, batch int) (oauth.PurgeResult, error) {
	var res oauth.PurgeResult
	tx := s.autocommit()
	expired, authorized := tx.timeArg(before.Expired), tx.timeArg(before.Authorized)
	lock, lockToken := "", ""
	if s.dialect == query.Postgres {
		lock, lockToken = " FOR UPDATE SKIP LOCKED", " FOR UPDATE OF t SKIP LOCKED"
	}
	steps := []struct {
		what  string
		count *int
		query string
		args  []any
	}{
		{"expired refresh tokens", &res.RefreshTokens, `
			DELETE FROM oauth_refresh_tokens WHERE hash IN (
				SELECT hash FROM oauth_refresh_tokens WHERE expires_at < $1
				LIMIT $2` + lock + `)`,
			[]any{expired}},
		{"refresh tokens of ended families", &res.RefreshTokens, `
			DELETE FROM oauth_refresh_tokens WHERE hash IN (
				SELECT t.hash FROM oauth_refresh_tokens t JOIN oauth_families f ON f.id = t.family_id
				WHERE f.revoked_at < $1 OR f.created_at < $2
				LIMIT $3` + lockToken + `)`,
			[]any{expired, authorized}},
		{"expired codes", &res.Codes, `
			DELETE FROM oauth_codes WHERE hash IN (
				SELECT hash FROM oauth_codes WHERE used_at IS NULL AND expires_at < $1
				LIMIT $2` + lock + `)`,
			[]any{expired}},
		{"redeemed codes", &res.Codes, `
			DELETE FROM oauth_codes WHERE hash IN (
				SELECT hash FROM oauth_codes WHERE used_at IS NOT NULL AND used_at < $1
				LIMIT $2` + lock + `)`,
			[]any{authorized}},
		{"ended families", &res.Families, `
			DELETE FROM oauth_families WHERE id IN (
				SELECT f.id FROM oauth_families f
				WHERE (f.revoked_at < $1 OR f.created_at < $2)
					AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens t WHERE t.family_id = f.id)
				LIMIT $3` + lock + `)`,
			[]any{expired, authorized}},
		{"grants", &res.Grants, `
			DELETE FROM oauth_grants WHERE id IN (
				SELECT id FROM oauth_grants WHERE created_at < $1
				LIMIT $2` + lock + `)`,
			[]any{authorized}},
	}
	for _, st := range steps {
		n, err := deleteBatches(ctx, tx, st.query, st.args, batch)
		*st.count += n
		if err != nil {
			return res, fmt.Errorf("sqlstore: purge %s: %w", st.what, err)
		}
	}
	return res, nil
}

// deleteBatches runs the DELETE query with args and batch, the most rows
// it deletes, as its last argument until it deletes fewer rows than batch,
// and returns how many it deleted in all.
func deleteBatches(ctx context.Context, tx *tx, query string, args []any, batch int) (int, error) {
	args = append(args[:len(args):len(args)], batch)
	total := 0
	for {
		r, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return total, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < int64(batch) {
			return total, nil
		}
	}
}
