package oauth

import "github.com/google/uuid"

// newID returns a new identifier (of an app, a client, a token family, a
// token's jti): a UUID version 7, whose time-ordered prefix keeps the
// inserts of an index local. Identifiers need not be unguessable; secrets,
// codes and refresh tokens are not identifiers and come from NewSecret.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}
