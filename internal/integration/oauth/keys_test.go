package oauth_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

const testIssuer = "https://issuer.test"

func mustKeySet(t testing.TB, current bearer.Key, previous ...bearer.Key) *bearer.KeySet {
	ks, err := bearer.NewKeySet(current, previous...)
	require.NoError(t, err)
	return ks
}
