package numbering

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Q-2026-000042", Format("Q", 2026, 42))
	assert.Equal(t, "Q-2026-000001", Format("Q", 2026, 1))
	assert.Equal(t, "INV-2026-1234567", Format("INV", 2026, 1234567))
}

// The embedded migrations exist for both dialects and create the table
// that Next writes.
func TestMigrationsEmbedded(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"migrations/postgres", "migrations/sqlite"} {
		b, err := migrations.ReadFile(dir + "/0001_number_sequences.sql")
		if assert.NoError(t, err, dir) {
			assert.Contains(t, string(b), "CREATE TABLE IF NOT EXISTS "+Table, dir)
		}
	}
}
