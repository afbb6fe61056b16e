package testdb

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// redisDeleteBatch is how many keys one SCAN step asks for and one UNLINK removes.
const redisDeleteBatch = 500

// rds is the Redis server of the process and a client on it used to delete test keys.
var rds service[*redis.Client]

// Redis returns a Redis URL and a key prefix unique to t, "test:" followed by 16 random
// hexadecimal characters and ":". Keys under the prefix are deleted in t.Cleanup; the
// test must put all of its keys under it, as other tests share the server and database.
//
// The server is the one WAYBILL_TEST_REDIS_URL names (redis://host:port/db); when that
// is unset, it is a container that testcontainers starts once per test process. Without
// either, t is skipped (or fails when CI is set).
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	url, client := rds.get(t, setupRedis)
	prefix = "test:" + randomHex(8) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := deletePrefix(ctx, client, prefix); err != nil {
			t.Errorf("testdb: delete redis keys %s*: %v", prefix, err)
		}
	})
	return url, prefix
}

// deletePrefix deletes every key that starts with prefix. prefix must not contain glob
// characters (* ? [ ] \).
func deletePrefix(ctx context.Context, client *redis.Client, prefix string) error {
	var cursor uint64
	for {
		keys, next, err := client.Scan(ctx, cursor, prefix+"*", redisDeleteBatch).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := client.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// setupRedis finds or starts the process's Redis server and opens the cleanup client on
// it.
func setupRedis() (url string, client *redis.Client, missing string, err error) {
	url = os.Getenv(envRedisURL)
	source := envRedisURL
	if url == "" {
		url, err = startContainer(runRedis)
		if err != nil {
			return "", nil, fmt.Sprintf("testdb: no Redis: %s is unset and testcontainers could not start a container: %v", envRedisURL, err), nil
		}
		source = "the Redis container"
	}

	opts, err := redis.ParseURL(url)
	if err != nil {
		return "", nil, "", fmt.Errorf("testdb: %s must be a redis://, rediss:// or unix:// URL: %w", source, err)
	}
	client = redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return "", nil, "", fmt.Errorf("testdb: Redis from %s (%s) does not answer: %w", source, redact(url), err)
	}
	return url, client, "", nil
}

// runRedis starts a Redis container and returns its URL.
func runRedis(ctx context.Context) (string, error) {
	ctr, err := tcredis.Run(ctx, redisImage)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return "", err
	}
	u, err := ctr.ConnectionString(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return "", err
	}
	return u, nil
}
