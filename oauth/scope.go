package oauth

import (
	"slices"
	"strings"
)

// ParseScope splits a space-separated scope parameter (RFC 6749 section
// 3.3) into its scopes, in order, without duplicates or empty entries.
func ParseScope(s string) []string {
	fields := strings.Fields(s)
	out := fields[:0]
	for _, f := range fields {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// formatScope joins scopes into a scope parameter.
func formatScope(scopes []string) string { return strings.Join(scopes, " ") }

// subset returns the scopes of requested that allowed lacks.
func missingScopes(requested, allowed []string) []string {
	var missing []string
	for _, s := range requested {
		if !slices.Contains(allowed, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// validScopeToken reports whether s may be a scope: printable ASCII other
// than space, double quote and backslash (RFC 6749 section 3.3).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// DescribeScope returns a scope in words for the consent page:
// "svc:orders:read" is "Read orders", "svc:master_data:write" is "Create,
// change and delete master data", and the identity scopes of OpenID
// Connect say what of the user the app learns. Other scopes are returned
// as they are.
func DescribeScope(scope string) string {
	switch scope {
	case ScopeOpenID:
		return "Know who you are: your user id on this service"
	case ScopeProfile:
		return "See your name"
	case ScopeEmail:
		return "See your email address"
	}
	parts := strings.Split(scope, ":")
	if len(parts) != 3 || parts[1] == "" {
		return scope
	}
	what := strings.ReplaceAll(parts[1], "_", " ")
	switch parts[2] {
	case "read":
		return "Read " + what
	case "write":
		return "Create, change and delete " + what
	}
	return scope
}
