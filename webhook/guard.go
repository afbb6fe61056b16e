package webhook

import "github.com/waybillhq/waybill/netguard"

// Guard is netguard.Guard, which keeps deliveries away from the network
// the server runs in: its CheckURL refuses endpoint URLs at addresses that
// are not public when they are registered, and its Client, which the
// Dispatcher delivers through by default, refuses to connect to such
// addresses at delivery. It is an alias, kept so that the webhook API
// does not change now that the guard lives in its own package.
type Guard = netguard.Guard

// ErrPrivateAddress is netguard.ErrPrivateAddress, the error (wrapped) of
// an endpoint URL or a connection refused because its address is not
// public. It is an alias of the same value, so errors.Is matches either.
var ErrPrivateAddress = netguard.ErrPrivateAddress

// maxURLLength is the longest endpoint URL, in bytes: the longest the
// Guard accepts.
const maxURLLength = netguard.MaxURLLength
