// Package excerpt cuts what a client sent (a member name, a parameter, a
// value) to a bounded length before an error message quotes it, so that
// an answer never echoes a megabyte back.
package excerpt

import "unicode/utf8"

// Cut returns s when it is at most n bytes; else its first n bytes, fewer
// when the n-th splits a character, followed by "…".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
