package oauth

import (
	"context"
	"fmt"
)

// Offboard ends a user's access to an organization, or to every
// organization when organizationID is "": it runs end, which ends the
// user's membership (or deletes the user) in the host's directory, and
// then revokes the user's refresh token families there
// (Store.RevokeUserFamilies), in that order, and returns how many families
// it revoked.
//
// The order is the rule. A code exchange saves its family first and
// checks the membership (Directory.Memberships) second, so a family is
// either seen by the revocation or refused by the check: none escapes, and
// no token can be minted in between. Revoking a family refuses its refresh
// tokens (400 invalid_grant) and, through a bearer.Verifier whose
// Families is the Store, its access tokens (401) at once.
//
// When end fails, nothing is revoked and its error is returned as it is.
// A revocation that fails after end succeeded leaves families that the
// next refresh refuses anyway (it checks the membership), or that running
// Offboard again revokes; Offboard is safe to run again for a membership
// that ended already.
func (s *Server) Offboard(ctx context.Context, userID, organizationID string, end func(context.Context) error) (revoked int, err error) {
	if err := end(ctx); err != nil {
		return 0, err
	}
	revoked, err = s.Store.RevokeUserFamilies(ctx, userID, organizationID, s.now())
	if err != nil {
		return 0, fmt.Errorf("oauth: revoke refresh tokens: %w", err)
	}
	return revoked, nil
}
