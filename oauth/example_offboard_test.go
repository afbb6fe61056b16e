package oauth_test

import (
	"context"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
)

// familyStore stands in for a Store (package sqlstore, say) in the
// example: it has two live families of the user.
type familyStore struct{ oauth.Store }

func (familyStore) RevokeUserFamilies(_ context.Context, userID, organizationID string, _ time.Time) (int, error) {
	fmt.Printf("revoke the families of %s in %s\n", userID, organizationID)
	return 2, nil
}

// A user leaves an organization: the host ends the membership in its own
// directory, and Offboard then revokes the user's tokens there, in the
// order that lets no token be minted in between.
func ExampleServer_Offboard() {
	srv := &oauth.Server{Store: familyStore{}}
	revoked, err := srv.Offboard(context.Background(), "user-1", "org-1", func(ctx context.Context) error {
		fmt.Println("delete the membership of user-1 in org-1")
		return nil // e.g. db.ExecContext(ctx, "DELETE FROM memberships WHERE ...")
	})
	fmt.Println(revoked, err)
	// Output:
	// delete the membership of user-1 in org-1
	// revoke the families of user-1 in org-1
	// 2 <nil>
}
