package audit_test

import (
	"context"
	"fmt"

	"github.com/waybillhq/waybill/audit"
)

// A caller that acts for someone says who in the context; the package that
// does the action reads it when it appends the action's entry (with
// auditdb.Append, in the action's transaction).
func ExampleNewContext() {
	ctx := audit.NewContext(context.Background(), audit.Who{
		Actor:      audit.Actor{Kind: audit.ActorUser, ID: "0b000000-0000-4000-8000-0000000000a1"},
		RemoteAddr: "203.0.113.9",
	})

	who, _ := audit.FromContext(ctx)
	entry := audit.Entry{
		OrganizationID: "0b000000-0000-4000-8000-000000000001",
		Action:         audit.AppCreated,
		Actor:          who.Actor,
		Target:         audit.Target{Kind: "app", ID: "dispatch-board"},
		RemoteAddr:     who.RemoteAddr,
	}
	fmt.Println(entry.Action, entry.Actor.Kind, entry.Target.ID, entry.RemoteAddr)
	// Output: app.created user dispatch-board 203.0.113.9
}
