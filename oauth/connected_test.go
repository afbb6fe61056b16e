package oauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

func TestCutOffList(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	l := &bearer.CutOffList{Source: cutOffSource{{OrganizationID: "o", ClientID: "c", At: at.Add(-time.Hour)}, {OrganizationID: "o", ClientID: "c", At: at}}}
	assert.False(t, l.CutOff("o", "c", at), "nothing is cut off before the first refresh")
	require.NoError(t, l.Refresh(context.Background()))
	assert.True(t, l.CutOff("o", "c", at.Add(-time.Minute)))
	assert.True(t, l.CutOff("o", "c", at.Truncate(time.Second)), "the same second is cut off")
	assert.False(t, l.CutOff("o", "c", at.Add(time.Second)))
	assert.False(t, l.CutOff("o", "d", at.Add(-time.Minute)), "another app")
	assert.False(t, l.CutOff("p", "c", at.Add(-time.Minute)), "another organization")
}

type cutOffSource []bearer.CutOff

func (s cutOffSource) CutOffs(context.Context, time.Time) ([]bearer.CutOff, error) { return s, nil }
