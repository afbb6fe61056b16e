package sqlstore

// PurgeBatches is Purge with batches of a given size, for the tests.
var PurgeBatches = (*Store).purge
