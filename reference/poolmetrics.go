package main

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector exports the statistics of a pgxpool.Pool under the names
// of Prometheus's collector of database/sql pools (go_sql_*), so that a
// dashboard reads the PostgreSQL pool and the SQLite one alike:
//
//	go_sql_max_open_connections          the pool's size (--db-max-conns)
//	go_sql_open_connections              connections open, in use or idle
//	go_sql_in_use_connections            connections in use
//	go_sql_idle_connections              connections idle
//	go_sql_wait_count_total              acquisitions that waited for a connection (to be released, or opened)
//	go_sql_wait_duration_seconds_total   the time they waited, in all
//	go_sql_max_idle_time_closed_total    connections closed for being idle too long
//	go_sql_max_lifetime_closed_total     connections closed for their age
//
// and waybill_db_statements_total, the statements sent to PostgreSQL
// (queries and commands, BEGIN and COMMIT included).
type poolCollector struct {
	pool       *pgxpool.Pool
	statements *statementCounter
	descs      struct {
		maxOpen, open, inUse, idle, waits, waited, idleClosed, lifetimeClosed, statements *prometheus.Desc
	}
}

// newPoolCollector returns the collector of a PostgreSQL database, its
// metrics labelled db_name=name.
func newPoolCollector(pg *pgDatabase, name string) *poolCollector {
	c := &poolCollector{pool: pg.pool, statements: pg.statements}
	labels := prometheus.Labels{"db_name": name}
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc("go_sql_"+metric, help, nil, labels)
	}
	c.descs.statements = prometheus.NewDesc("waybill_db_statements_total",
		"Statements sent to the database: queries and commands, BEGIN and COMMIT included.", nil, labels)
	c.descs.maxOpen = desc("max_open_connections", "Maximum number of open connections to the database.")
	c.descs.open = desc("open_connections", "The number of established connections both in use and idle.")
	c.descs.inUse = desc("in_use_connections", "The number of connections currently in use.")
	c.descs.idle = desc("idle_connections", "The number of idle connections.")
	c.descs.waits = desc("wait_count_total", "The total number of connections waited for.")
	c.descs.waited = desc("wait_duration_seconds_total", "The total time blocked waiting for a new connection.")
	c.descs.idleClosed = desc("max_idle_time_closed_total", "The total number of connections closed due to their idle time.")
	c.descs.lifetimeClosed = desc("max_lifetime_closed_total", "The total number of connections closed due to their lifetime.")
	return c
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.descs.maxOpen, c.descs.open, c.descs.inUse, c.descs.idle,
		c.descs.waits, c.descs.waited, c.descs.idleClosed, c.descs.lifetimeClosed, c.descs.statements} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.descs.maxOpen, float64(s.MaxConns()))
	gauge(c.descs.open, float64(s.TotalConns()))
	gauge(c.descs.inUse, float64(s.AcquiredConns()))
	gauge(c.descs.idle, float64(s.IdleConns()))
	counter(c.descs.waits, float64(s.EmptyAcquireCount()))
	counter(c.descs.waited, s.EmptyAcquireWaitTime().Seconds())
	counter(c.descs.idleClosed, float64(s.MaxIdleDestroyCount()))
	counter(c.descs.lifetimeClosed, float64(s.MaxLifetimeDestroyCount()))
	counter(c.descs.statements, float64(c.statements.n.Load()))
}
