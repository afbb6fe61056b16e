package oauth

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/waybillhq/waybill/internal/excerpt"
)

// The rules that a client's own metadata meets, whether the client
// registers itself (RegisterClient) or serves a client metadata document
// (ClientMetadataDocuments). Each returns the problem in words; the caller
// turns it into its error.

// maxClientNameLength is the longest client name accepted, in bytes.
const maxClientNameLength = 200

// maxClientRedirectURIs is the most redirect URIs a client may list.
const maxClientRedirectURIs = 20

// checkClientName returns the name trimmed, or why it is refused: empty,
// longer than maxClientNameLength, not UTF-8, or holding a control
// character (the consent page shows it to users).
func checkClientName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errors.New("client_name is required: the consent page names the client to the user")
	case len(name) > maxClientNameLength:
		return "", fmt.Errorf("client_name is longer than %d bytes", maxClientNameLength)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) }):
		return "", errors.New("client_name holds a control character")
	}
	return name, nil
}

// checkClientRedirectURIs returns why a client's list of redirect URIs is
// refused: empty, longer than maxClientRedirectURIs, or holding one that
// CheckRedirectURI refuses.
func checkClientRedirectURIs(uris []string) error {
	switch {
	case len(uris) == 0:
		return errors.New("redirect_uris must list at least one redirect URI: the client uses the authorization-code grant")
	case len(uris) > maxClientRedirectURIs:
		return fmt.Errorf("redirect_uris lists more than %d redirect URIs", maxClientRedirectURIs)
	}
	for _, u := range uris {
		if err := CheckRedirectURI(u); err != nil {
			return err
		}
	}
	return nil
}

// checkClientGrants returns why a client's grant_types and response_types
// are refused: such a client acts for the users who approve it, so it gets
// authorization_code and refresh_token alone, and the response type code.
func checkClientGrants(grants, responses []string) error {
	for _, g := range grants {
		if g != "authorization_code" && g != "refresh_token" {
			return fmt.Errorf("grant_types may name authorization_code and refresh_token alone, not %q: the client acts for the users who approve it", excerpt.Cut(g, 64))
		}
	}
	for _, r := range responses {
		if r != "code" {
			return fmt.Errorf("response_types may name code alone, not %q", excerpt.Cut(r, 64))
		}
	}
	return nil
}

// checkClientScopes returns why the scopes a client asks to be allowed
// are refused: malformed, or not among allowed (see registrableScopes).
func checkClientScopes(scopes, allowed []string) error {
	for _, sc := range scopes {
		if !validScopeToken(sc) {
			return fmt.Errorf("scope %q is malformed", excerpt.Cut(sc, 64))
		}
	}
	if missing := missingScopes(scopes, allowed); len(missing) > 0 {
		return fmt.Errorf("scope names %s, which this server does not know", excerpt.Cut(strings.Join(missing, " "), 200))
	}
	return nil
}
