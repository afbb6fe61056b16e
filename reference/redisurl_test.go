package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// The forms of --redis-url: one server, a cluster, a Sentinel; the
// timeouts of one server for all three unless the URL sets its own.
func TestRedisURLForms(t *testing.T) {
	t.Parallel()
	type want struct {
		addrs            []string // cluster seeds or Sentinels
		master           string
		db               int
		user, password   string
		sentinelPassword string
		dialTimeout      time.Duration
		maxRetries       int
		tls              bool
	}
	tests := []struct {
		url     string
		kind    string // "cluster" or "sentinel"
		want    want
		wantErr string
	}{
		{url: "redis+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3", kind: "cluster",
			want: want{addrs: []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:6379"}, dialTimeout: redisDialTimeout, maxRetries: redisMaxRetries}},
		{url: "redis+cluster://u:hunter2@r1:7000/?dial_timeout=3s&max_retries=4", kind: "cluster",
			want: want{addrs: []string{"r1:7000"}, user: "u", password: "hunter2", dialTimeout: 3 * time.Second, maxRetries: 4}},
		{url: "rediss+cluster://[::1]:7000,[::2]", kind: "cluster",
			want: want{addrs: []string{"[::1]:7000", "[::2]:6379"}, dialTimeout: redisDialTimeout, maxRetries: redisMaxRetries, tls: true}},
		{url: "redis+sentinel://s1:26379,s2:26380,s3/mymaster", kind: "sentinel",
			want: want{addrs: []string{"s1:26379", "s2:26380", "s3:26379"}, master: "mymaster", dialTimeout: redisDialTimeout, maxRetries: redisMaxRetries}},
		{url: "redis+sentinel://:hunter2@s1/mymaster?db=3&sentinel_password=s3cret&read_timeout=2s", kind: "sentinel",
			want: want{addrs: []string{"s1:26379"}, master: "mymaster", db: 3, password: "hunter2", sentinelPassword: "s3cret", dialTimeout: redisDialTimeout, maxRetries: redisMaxRetries}},
		{url: "rediss+sentinel://s1:26379/m", kind: "sentinel",
			want: want{addrs: []string{"s1:26379"}, master: "m", dialTimeout: redisDialTimeout, maxRetries: redisMaxRetries, tls: true}},

		{url: "redis+cluster://u:hunter2@r1:7000/2", wantErr: "a Redis Cluster has only database 0"},
		{url: "redis+cluster://u:hunter2@r1:7000,,r2:7000", wantErr: "a node without a host"},
		{url: "redis+cluster://u:hunter2@r1:x", wantErr: "not host:port"},
		{url: "redis+cluster://u:hunter2@r1:7000?addr=r2:7000", wantErr: "not with addr"},
		{url: "redis+cluster://u:hunter2@r1:7000?dial_timeout=soon", wantErr: "dial_timeout"},
		{url: "redis+cluster://u:hunter2@r1:7000?bogus=1", wantErr: "unexpected option: bogus"},
		{url: "redis+sentinel://u:hunter2@s1:26379", wantErr: "names the master as its path"},
		{url: "redis+sentinel://u:hunter2@s1:26379/a/b", wantErr: "names the master as its path"},
		{url: "redis+sentinel://u:hunter2@s1:26379/m?master_name=n", wantErr: "not with master_name"},
		{url: "redis+sentinel://u:hunter2@s1:26379/m?db=x", wantErr: "invalid database number"},
		{url: "redis+sentinel://u:hunter2@s1:26379/m?route_randomly=maybe", wantErr: "route_randomly"},
		{url: "http://u:hunter2@r/0", wantErr: "invalid URL scheme"},
	}
	for _, tt := range tests {
		t.Run(redactRedisURL(tt.url), func(t *testing.T) {
			client, err := newRedisClient(tt.url)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), "--redis-url")
				assert.NotContains(t, err.Error(), "hunter2")
				return
			}
			require.NoError(t, err)
			defer client.Close()
			var got want
			switch tt.kind {
			case "cluster":
				c, ok := client.(*redis.ClusterClient)
				require.True(t, ok, "%T", client)
				o := c.Options()
				got = want{addrs: o.Addrs, user: o.Username, password: o.Password, dialTimeout: o.DialTimeout, maxRetries: o.MaxRetries, tls: o.TLSConfig != nil}
				assert.Equal(t, redisIOTimeout, o.WriteTimeout)
				assert.Equal(t, redisDialerRetries, o.DialerRetries)
			case "sentinel":
				// NewFailoverClient keeps no FailoverOptions to read back:
				// parse as newRedisClient does.
				_, ok := client.(*redis.Client)
				require.True(t, ok, "%T", client)
				o := failoverOptions(t, tt.url)
				got = want{addrs: o.SentinelAddrs, master: o.MasterName, db: o.DB, user: o.Username, password: o.Password, sentinelPassword: o.SentinelPassword, dialTimeout: o.DialTimeout, maxRetries: o.MaxRetries, tls: o.TLSConfig != nil}
				if tt.want.dialTimeout == redisDialTimeout && o.ReadTimeout != 2*time.Second {
					assert.Equal(t, redisIOTimeout, o.ReadTimeout)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// failoverOptions returns the options newRedisClient gives a sentinel URL.
func failoverOptions(t *testing.T, rawURL string) *redis.FailoverOptions {
	t.Helper()
	o, err := sentinelOptions(rawURL)
	require.NoError(t, err)
	return o
}

// serve refuses a bad cluster or sentinel URL at start, saying why,
// without its password.
func TestServeBadRedisURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"redis+cluster://u:hunter2@r1:7000,r2:7000/1", "redis+sentinel://:hunter2@s1,s2"} {
		_, err := runCommand(t, nil, "serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://"+testdb.SQLitePath(t), "--redis-url", bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "--redis-url")
		assert.NotContains(t, err.Error(), "hunter2")
		t.Log(err)
	}
}

func TestRedactRedisURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis+cluster://u:hunter2@a:1,b:2/?x=1":                "redis+cluster://u:xxxxx@a:1,b:2/?x=1",
		"redis+sentinel://:hunter2@a:1,b:2/m?db=1":              "redis+sentinel://:xxxxx@a:1,b:2/m?db=1",
		"redis+sentinel://a:1,b:2/m":                            "redis+sentinel://a:1,b:2/m",
		"redis://u:hunter2@a:1/0":                               "redis://u:xxxxx@a:1/0",
		"redis+sentinel://a:1/m?sentinel_password=hunter2&db=1": "redis+sentinel://a:1/m?sentinel_password=xxxxx&db=1",
	} {
		assert.Equal(t, want, redactRedisURL(in), in)
	}
}
