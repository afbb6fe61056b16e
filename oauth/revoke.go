package oauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// RevokeToken revokes token for app, the authenticated client, as RFC 7009
// revocation does. What it revokes is a refresh token family: every refresh
// token of one authorization and every access token issued from them,
// which bearer.Verifier.Families refuses from then on.
//
//   - A refresh token of app: its family is revoked, its newest token and
//     its access tokens included.
//   - An authorization-code access token of app: its jti names its family,
//     which is revoked the same way (RFC 7009 section 2.1 lets a server
//     revoke the refresh token of an access token), so the user's grant to
//     the app ends at once.
//   - A client-credentials access token, or a product user token: nothing
//     can revoke it before it expires, so the answer is
//     unsupported_token_type (RFC 7009 section 2.2.1) rather than a
//     success that changed nothing.
//   - A token issued to another client: unauthorized_client, and nothing
//     is revoked (RFC 7009 section 2.1).
//   - An unknown, malformed or expired token: nil, as RFC 7009 section 2.2
//     asks; there is nothing left to revoke.
//
// Revoking a revoked family again succeeds.
func (s *Server) RevokeToken(ctx context.Context, app *App, token string) error {
	if token == "" {
		return apierrors.InvalidRequest("token is required")
	}
	now := s.now()
	rt, err := s.Store.RefreshToken(ctx, hashSecret(token))
	switch {
	case err == nil:
		if rt.ClientID != app.ClientID {
			return apierrors.UnauthorizedClient("the token was issued to another client")
		}
		return s.revokeFamily(ctx, rt.FamilyID, now)
	case !errors.Is(err, ErrNotFound):
		return apierrors.Internal(fmt.Errorf("oauth: load refresh token: %w", err))
	}
	c, err := s.verifier().Verify(ctx, token)
	if err != nil {
		return nil // unknown, malformed, expired: nothing to revoke
	}
	expires := time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339)
	switch {
	case !c.OAuth():
		return apierrors.UnsupportedTokenType("a product user token cannot be revoked; it stays valid until it expires at %s", expires)
	case c.ClientID != app.ClientID:
		return apierrors.UnauthorizedClient("the token was issued to another client")
	case c.FamilyID() == "":
		return apierrors.UnsupportedTokenType("a client-credentials access token cannot be revoked; it stays valid until it expires at %s", expires)
	}
	return s.revokeFamily(ctx, c.FamilyID(), now)
}

func (s *Server) revokeFamily(ctx context.Context, familyID string, now time.Time) error {
	if err := s.Store.RevokeFamily(ctx, familyID, now); err != nil {
		return apierrors.Internal(fmt.Errorf("oauth: revoke family: %w", err))
	}
	return nil
}

// revokeAppTokens revokes every refresh token family of the app with
// clientID, and so every refresh token and authorization-code access token
// issued to it, and returns how many families it revoked (families revoked
// before are not counted). The app's client-credentials access tokens are
// not revocable: they stay valid until they expire, at most AccessTokenTTL
// after they were issued.
func (s *Server) revokeAppTokens(ctx context.Context, clientID string) (int, error) {
	n, err := s.Store.RevokeClientFamilies(ctx, clientID, s.now())
	if err != nil {
		return 0, apierrors.Internal(fmt.Errorf("oauth: revoke the app's families: %w", err))
	}
	return n, nil
}

// SecretRotation is what a secret rotation answers: the new secret, shown
// this once, and what became of the tokens issued before.
type SecretRotation struct {
	// ClientID is the app's client id.
	ClientID string `json:"client_id"`
	// ClientSecret is the new secret; the old one no longer authenticates.
	ClientSecret string `json:"client_secret"`
	// TokensRevoked says whether the rotation revoked the app's refresh
	// tokens and authorization-code access tokens.
	TokensRevoked bool `json:"tokens_revoked"`
	// RevokedFamilies is how many refresh token families it revoked.
	RevokedFamilies int `json:"revoked_families"`
	// AccessTokensValidUntil bounds the expiry of the access tokens issued
	// before the rotation that still work: the client-credentials ones
	// always, the authorization-code ones unless TokensRevoked.
	AccessTokensValidUntil time.Time `json:"access_tokens_valid_until"`
	// Tokens says the same in words.
	Tokens string `json:"tokens"`
}

// RotateAppSecret gives the app a new client secret, shown this once in
// the answer (the old one stops working at once), and with revokeTokens
// then revokes its tokens, as revokeAppTokens does: its
// refresh tokens and authorization-code access tokens fail at once. Its
// client-credentials access tokens cannot be revoked and live out their
// lifetime; the answer says until when. The secret changes first, so no
// token is issued under the old secret after the revocation, but a code
// exchange that authenticated with the old secret just before the rotation
// may still save its family just after the revocation.
func (s *Server) RotateAppSecret(ctx context.Context, clientID string, revokeTokens bool) (*SecretRotation, error) {
	secret, err := s.rotateSecret(ctx, clientID)
	if err != nil {
		return nil, err
	}
	until := s.now().Add(s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL)).UTC().Truncate(time.Second)
	r := &SecretRotation{ClientID: clientID, ClientSecret: secret, AccessTokensValidUntil: until}
	if !revokeTokens {
		r.Tokens = fmt.Sprintf("tokens issued before the rotation stay valid: refresh tokens until they expire or are revoked, "+
			"access tokens until they expire, by %s; rotate with revoke_tokens to revoke the refresh tokens and "+
			"authorization-code access tokens at once", until.Format(time.RFC3339))
		return r, nil
	}
	if r.RevokedFamilies, err = s.revokeAppTokens(ctx, clientID); err != nil {
		return nil, err
	}
	r.TokensRevoked = true
	r.Tokens = fmt.Sprintf("every refresh token of the app and every access token issued from one is revoked (%d authorizations); "+
		"client-credentials access tokens cannot be revoked and stay valid until they expire, by %s", r.RevokedFamilies, until.Format(time.RFC3339))
	return r, nil
}
