package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEFeedConsumer checks that the program the README shows in its
// section on the change feed is feedconsumer/main.go, as it is, so that
// the copy a reader pastes builds and is tested.
func TestREADMEFeedConsumer(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	program, err := os.ReadFile("feedconsumer/main.go")
	require.NoError(t, err)

	_, section, ok := strings.Cut(string(readme), "## Pulling instead: the change feed\n")
	require.True(t, ok, "the README has the section")
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has a Go block")
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok, "the Go block ends")
	assert.Equal(t, string(program), block, "the README's program is feedconsumer/main.go; copy it over after a change")
}
