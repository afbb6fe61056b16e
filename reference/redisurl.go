package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The schemes of --redis-url beside redis://, rediss:// and unix:// (one
// server, redis.ParseURL): a Redis Cluster and a Redis Sentinel, each with
// a TLS variant.
const (
	schemeCluster     = "redis+cluster"
	schemeClusterTLS  = "rediss+cluster"
	schemeSentinel    = "redis+sentinel"
	schemeSentinelTLS = "rediss+sentinel"
)

// Default ports of the nodes of a URL that names none.
const (
	defaultRedisPort    = "6379"
	defaultSentinelPort = "26379"
)

// newRedisClient returns a client on the Redis of rawURL, with the
// timeouts above where the URL sets none. rawURL is one of:
//
//   - redis://[user:password@]host:port[/db], rediss://..., unix://...:
//     one server (redis.ParseURL);
//   - redis+cluster://[user:password@]host:port,host:port,...[?options]:
//     a Redis Cluster, whose nodes are discovered from these seeds; no
//     database number (a cluster has only 0); rediss+cluster:// for TLS;
//   - redis+sentinel://[user:password@]host:port,host:port,.../master[?db=N&options]:
//     the master named master, found through these Sentinels and followed
//     when they fail over; the user and password are those of the Redis
//     servers, sentinel_username and sentinel_password those of the
//     Sentinels; rediss+sentinel:// for TLS.
//
// Options are go-redis's query parameters (dial_timeout=2s, max_retries=3
// and so on). An error never holds the password.
func newRedisClient(rawURL string) (redis.UniversalClient, error) {
	client, err := parseRedisURL(rawURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			// It quotes the URL, and with it a password.
			err = errors.New("not a URL")
		}
		return nil, fmt.Errorf("--redis-url %s: %w", redactRedisURL(rawURL), err)
	}
	return client, nil
}

// parseRedisURL is newRedisClient without the flag's name in its errors.
func parseRedisURL(rawURL string) (redis.UniversalClient, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case schemeCluster, schemeClusterTLS:
		opts, err := clusterOptions(rawURL)
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(opts), nil
	case schemeSentinel, schemeSentinelTLS:
		opts, err := sentinelOptions(rawURL)
		if err != nil {
			return nil, err
		}
		return redis.NewFailoverClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	withRedisDefaults(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries)
	return redis.NewClient(opts), nil
}

// clusterOptions parses a redis+cluster:// URL.
func clusterOptions(rawURL string) (*redis.ClusterOptions, error) {
	u, err := redisNodesURL(rawURL, defaultRedisPort)
	if err != nil {
		return nil, err
	}
	if strings.Trim(u.Path, "/") != "" {
		return nil, errors.New("a cluster URL has no path: a Redis Cluster has only database 0")
	}
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	withRedisDefaults(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries)
	return opts, nil
}

// sentinelOptions parses a redis+sentinel:// URL.
func sentinelOptions(rawURL string) (*redis.FailoverOptions, error) {
	u, err := redisNodesURL(rawURL, defaultSentinelPort)
	if err != nil {
		return nil, err
	}
	master := strings.Trim(u.Path, "/")
	if master == "" || strings.Contains(master, "/") {
		return nil, errors.New("a sentinel URL names the master as its path: redis+sentinel://host:26379,host:26379/mymaster")
	}
	q := u.Query()
	if q.Has("master_name") {
		return nil, errors.New("a sentinel URL names the master as its path, not with master_name")
	}
	// The user and password of the URL are the servers'; go-redis would
	// give them to the Sentinels.
	user, password := u.User.Username(), ""
	if p, ok := u.User.Password(); ok {
		password = p
	}
	sentinelUser, sentinelPassword := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", master)
	u.User, u.Path, u.RawQuery = nil, "", q.Encode()
	opts, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	opts.Username, opts.Password = user, password
	opts.SentinelUsername, opts.SentinelPassword = sentinelUser, sentinelPassword
	withRedisDefaults(&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.MaxRetries, &opts.DialerRetries)
	return opts, nil
}

// redisNodesURL turns a cluster or sentinel URL, whose host is a
// comma-separated list of nodes, into the URL go-redis parses: scheme
// redis or rediss, the first node as host (with defaultPort when it names
// none) and the others as addr parameters.
func redisNodesURL(rawURL, defaultPort string) (*url.URL, error) {
	scheme, userinfo, hosts, rest := splitNodesURL(rawURL)
	var nodes []string
	for _, n := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(n)
		if err != nil {
			if strings.Count(n, ":") == 1 || strings.HasPrefix(n, "[") && !strings.HasSuffix(n, "]") {
				return nil, fmt.Errorf("node %q: not host:port", n)
			}
			host, port = strings.Trim(n, "[]"), defaultPort
		}
		if host == "" {
			return nil, errors.New("a node without a host: list host:port,host:port")
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("node %q: not host:port", n)
		}
		nodes = append(nodes, net.JoinHostPort(host, port))
	}
	u, err := url.Parse(scheme + "://" + userinfo + nodes[0] + rest)
	if err != nil {
		return nil, err
	}
	if u.Fragment != "" {
		return nil, errors.New("a URL with a fragment (#)")
	}
	q := u.Query()
	if q.Has("addr") {
		return nil, errors.New("list the nodes in the host, separated by commas, not with addr")
	}
	for _, n := range nodes[1:] {
		q.Add("addr", n)
	}
	u.Scheme = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(u.Scheme), "+cluster"), "+sentinel")
	u.RawQuery = q.Encode()
	return u, nil
}

// splitNodesURL splits scheme://userinfo@host,host/path?query into its
// scheme, its userinfo with the @ ("" without), its list of hosts and the
// rest (path, query, fragment).
func splitNodesURL(rawURL string) (scheme, userinfo, hosts, rest string) {
	scheme, after, _ := strings.Cut(rawURL, "://")
	authority := after
	if i := strings.IndexAny(after, "/?#"); i >= 0 {
		authority, rest = after[:i], after[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	} else {
		hosts = authority
	}
	return scheme, userinfo, hosts, rest
}

// redactRedisURL returns rawURL with its password, if any, and its
// sentinel_password parameter replaced by xxxxx, also for a URL of several
// hosts, which url.Parse refuses.
func redactRedisURL(rawURL string) string {
	rawURL = sentinelPasswordParam.ReplaceAllString(rawURL, "${1}xxxxx")
	scheme, userinfo, hosts, rest := splitNodesURL(rawURL)
	if !strings.Contains(hosts, ",") {
		return redactURL(rawURL)
	}
	if user, _, ok := strings.Cut(strings.TrimSuffix(userinfo, "@"), ":"); ok {
		userinfo = user + ":xxxxx@"
	}
	return scheme + "://" + userinfo + hosts + rest
}

// sentinelPasswordParam matches the value of a sentinel_password
// parameter, after its name (group 1).
var sentinelPasswordParam = regexp.MustCompile(`([?&]sentinel_password=)[^&#]*`)

// withRedisDefaults sets the server's timeouts and retries of a Redis
// client (one server, a cluster or Sentinel's) where its URL set none.
func withRedisDefaults(dial, read, write *time.Duration, retries, dialerRetries *int) {
	*dial = orDefault(*dial, redisDialTimeout)
	*read = orDefault(*read, redisIOTimeout)
	*write = orDefault(*write, redisIOTimeout)
	*retries = orDefault(*retries, redisMaxRetries)
	*dialerRetries = orDefault(*dialerRetries, redisDialerRetries)
}

// orDefault returns v, or def when v is zero (unset in the URL).
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
