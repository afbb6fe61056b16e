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
// lock, waiting for it under busy_timeout.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_txlock=immediate"

// sqliteMaxConns is the size of the pool of a SQLite database: one
// connection, which serializes the process's statements.
const sqliteMaxConns = 1
