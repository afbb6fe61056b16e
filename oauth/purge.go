package oauth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultPurgeRetention is how long Server.Purge keeps what has ended: an
// expired code or refresh token, a revoked family. Within it a replayed
// code or token is still recognized for what it is (spent, revoked) and
// logged so; the access tokens of a revoked family, which live an hour at
// most, stay refused until they expire. After it a replay is refused as an
// unknown token, with invalid_grant all the same.
const DefaultPurgeRetention = 7 * 24 * time.Hour

// PurgeBefore names what a purge deletes: the state that ended before its
// two times. Server.Purge computes them from the clock, the retention and
// RefreshMaxAge.
type PurgeBefore struct {
	// Expired: authorization codes never redeemed that expired before it,
	// refresh tokens that expired before it, and refresh token families
	// revoked before it, with all their tokens, are deleted.
	Expired time.Time
	// Authorized: authorizations begun before it have reached their
	// maximum age. The families begun before it (their AuthorizedAt), with
	// all their tokens, the codes redeemed before it, which began them, and
	// the consent grants given before it are deleted.
	Authorized time.Time
}

// PurgeResult counts the records one purge deleted.
type PurgeResult struct {
	Codes         int `json:"codes"`
	RefreshTokens int `json:"refresh_tokens"`
	Families      int `json:"families"`
	Grants        int `json:"grants"`
}

// Total returns the number of records deleted, of every kind.
func (r PurgeResult) Total() int {
	return r.Codes + r.RefreshTokens + r.Families + r.Grants
}

// Purger deletes the state that has ended, so that the tables of codes,
// refresh tokens, families and grants do not grow without bound. A Store
// may implement it; Server.Purge uses it. Package
// github.com/waybillhq/waybill/oauth/sqlstore implements it, and
// oauthtest.TestPurger is its conformance suite.
//
// Purge deletes, as PurgeBefore says: the codes never redeemed that expired
// before before.Expired and the codes redeemed before before.Authorized;
// the refresh tokens that expired before before.Expired; the families
// revoked before before.Expired or authorized before before.Authorized,
// with all their tokens. It keeps everything else: a spent token that has
// not expired, above all, whose reuse must still revoke its family, and a
// redeemed code whose family may still be in use, whose replay must still
// revoke it. A family is deleted after its tokens, never before, so that
// no token outlives its family's revocation.
//
// It works in bounded batches, so that a large backlog never holds locks
// for long, and returns how many records this call deleted. Deletes are
// idempotent: several processes may purge one store at once, and each
// record is counted by the one call that deleted it. When ctx ends, Purge
// returns what it deleted so far with the error; a later call goes on.
type Purger interface {
	Purge(ctx context.Context, before PurgeBefore) (PurgeResult, error)
}

// ErrPurgeUnsupported is returned by Server.Purge when the Store is not a
// Purger.
var ErrPurgeUnsupported = errors.New("oauth: the store cannot purge")

// Purge deletes, through the Store's Purger, what ended longer than
// retention ago: codes and refresh tokens that expired, families that were
// revoked, and authorizations (families, the codes that began them, consent
// grants) older than RefreshMaxAge. A retention of zero means
// DefaultPurgeRetention; one shorter than AccessTokenTTL is raised to it,
// so that a revoked family is kept as long as access tokens issued from it
// may be valid, and those stay refused. It returns the counts of what it
// deleted, or ErrPurgeUnsupported when the Store cannot purge.
func (s *Server) Purge(ctx context.Context, retention time.Duration) (PurgeResult, error) {
	p, ok := s.Store.(Purger)
	if !ok {
		return PurgeResult{}, ErrPurgeUnsupported
	}
	res, err := p.Purge(ctx, s.purgeBefore(retention))
	if err != nil {
		return res, fmt.Errorf("oauth: purge: %w", err)
	}
	return res, nil
}

// purgeBefore returns the times before which a purge with retention
// deletes.
func (s *Server) purgeBefore(retention time.Duration) PurgeBefore {
	retention = max(s.ttl(retention, DefaultPurgeRetention), s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL))
	expired := s.now().Add(-retention)
	return PurgeBefore{Expired: expired, Authorized: expired.Add(-s.ttl(s.RefreshMaxAge, DefaultRefreshMaxAge))}
}
