package oauth

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewID(t *testing.T) {
	prev := ""
	for range 100 {
		id := newID()
		u, err := uuid.Parse(id)
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(7), u.Version())
		assert.Equal(t, u.String(), id, "canonical form")
		assert.Greater(t, id, prev, "time-ordered")
		prev = id
	}
}
