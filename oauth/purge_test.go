package oauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// puRecorder is a store that records what it is asked to purge.
type puRecorder struct {
	oauth.Store
	got oauth.PurgeBefore
}

// Purge records before.
func (r *puRecorder) Purge(_ context.Context, before oauth.PurgeBefore) (oauth.PurgeResult, error) {
	r.got = before
	return oauth.PurgeResult{}, nil
}

// Server.Purge asks the store to purge what ended longer than the
// retention ago, and never less than an access token's lifetime ago.
func TestPurgeCutoffs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name          string
		retention     time.Duration
		accessTTL     time.Duration
		refreshMaxAge time.Duration
		keep          time.Duration // what Expired is before now
		maxAge        time.Duration // what Authorized is before Expired
	}{
		{name: "defaults", keep: oauth.DefaultPurgeRetention, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a retention", retention: 30 * day, keep: 30 * day, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a retention shorter than an access token", retention: time.Minute, keep: oauth.DefaultAccessTokenTTL, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "longer access tokens", retention: 2 * time.Hour, accessTTL: 3 * time.Hour, keep: 3 * time.Hour, maxAge: oauth.DefaultRefreshMaxAge},
		{name: "a maximum age", refreshMaxAge: 10 * day, keep: oauth.DefaultPurgeRetention, maxAge: 10 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &puRecorder{}
			srv := &oauth.Server{Store: rec, Now: func() time.Time { return now }, AccessTokenTTL: tt.accessTTL, RefreshMaxAge: tt.refreshMaxAge}
			_, err := srv.Purge(t.Context(), tt.retention)
			require.NoError(t, err)
			assert.Equal(t, now.Add(-tt.keep), rec.got.Expired)
			assert.Equal(t, now.Add(-tt.keep-tt.maxAge), rec.got.Authorized)
		})
	}
}

func TestPurgeUnsupported(t *testing.T) {
	t.Parallel()
	srv := &oauth.Server{Store: struct{ oauth.Store }{}}
	_, err := srv.Purge(t.Context(), 0)
	assert.ErrorIs(t, err, oauth.ErrPurgeUnsupported)
}
