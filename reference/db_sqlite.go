package main

// The settings of a SQLite database (see openDB), alone in this file so
// that BenchmarkSQLiteHTTP can build the server with others in their place
// and measure them.

// sqlitePragmas is the query of the SQLite DSN. modernc.org/sqlite runs
// the pragmas on every connection it opens: busy_timeout first, so that
// the switch to WAL already waits for other connections; foreign keys on;
// the WAL journal, with SQLite's default synchronous (FULL: a commit is on
// disk before it returns). _txlock=immediate begins every transaction that
// is not read only with BEGIN IMMEDIATE, which takes the database's write
// lock, waiting for it under busy_timeout. optimize(0x10002), which
// modernc.org/sqlite runs after journal_mode (it sorts the pragmas after
// busy_timeout by name), is what SQLite's documentation asks of a
// connection that stays open long: it runs ANALYZE, within a small
// analysis limit, on every table whose indexes have no statistics yet or
// whose size changed a lot since its last ANALYZE, so that the planner
// chooses its indexes from the data (see startSQLiteOptimize for the
// periodic runs).
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=optimize(0x10002)&_txlock=immediate"

// sqliteMaxConns is the size of the pool of a SQLite database: one
// connection, which serializes the process's statements.
const sqliteMaxConns = 1
