package oauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// revokeRecorder is a Store that records RevokeUserFamilies calls and the
// steps around them; every other method panics (the embedded nil Store).
type revokeRecorder struct {
	oauth.Store
	steps   *[]string
	revoked int
	err     error
	now     time.Time
	org     string
}

func (r *revokeRecorder) RevokeUserFamilies(_ context.Context, userID, organizationID string, now time.Time) (int, error) {
	*r.steps = append(*r.steps, "revoke "+userID+" in "+organizationID)
	r.now, r.org = now, organizationID
	return r.revoked, r.err
}

func TestOffboard(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	t.Run("the membership ends first, the families are revoked second", func(t *testing.T) {
		t.Parallel()
		var steps []string
		store := &revokeRecorder{steps: &steps, revoked: 2}
		srv := &oauth.Server{Store: store, Now: func() time.Time { return clock }}
		n, err := srv.Offboard(t.Context(), "user-1", "org-1", func(context.Context) error {
			steps = append(steps, "end membership")
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		assert.Equal(t, []string{"end membership", "revoke user-1 in org-1"}, steps)
		assert.Equal(t, clock, store.now, "on the server's clock")
	})
	t.Run("every organization", func(t *testing.T) {
		t.Parallel()
		var steps []string
		store := &revokeRecorder{steps: &steps}
		srv := &oauth.Server{Store: store}
		_, err := srv.Offboard(t.Context(), "user-1", "", func(context.Context) error { return nil })
		require.NoError(t, err)
		assert.Equal(t, []string{"revoke user-1 in "}, steps)
	})
	t.Run("a membership that does not end revokes nothing", func(t *testing.T) {
		t.Parallel()
		var steps []string
		srv := &oauth.Server{Store: &revokeRecorder{steps: &steps, revoked: 1}}
		failed := errors.New("delete membership: database is down")
		n, err := srv.Offboard(t.Context(), "user-1", "org-1", func(context.Context) error { return failed })
		require.ErrorIs(t, err, failed)
		assert.Equal(t, failed, err, "returned as it is")
		assert.Zero(t, n)
		assert.Empty(t, steps)
	})
	t.Run("a failed revocation", func(t *testing.T) {
		t.Parallel()
		var steps []string
		failed := errors.New("database is down")
		srv := &oauth.Server{Store: &revokeRecorder{steps: &steps, revoked: 3, err: failed}}
		n, err := srv.Offboard(t.Context(), "user-1", "org-1", func(context.Context) error { return nil })
		require.ErrorIs(t, err, failed)
		assert.Contains(t, err.Error(), "oauth: revoke refresh tokens")
		assert.Zero(t, n)
	})
}
