-- The counter of one kind of number (quotation, order, ...) of one branch
-- and year: next_value is the number the next record gets. Taken with an
-- upsert inside the write's transaction, so numbers have no duplicates, and
-- a write that fails or rolls back gives its number back. IF NOT EXISTS: a
-- host whose own schema created the table keeps it.
CREATE TABLE IF NOT EXISTS number_sequences (
    branch_id  text    NOT NULL,
    kind       text    NOT NULL,
    year       integer NOT NULL,
    next_value integer NOT NULL,
    PRIMARY KEY (branch_id, kind, year)
) STRICT;
