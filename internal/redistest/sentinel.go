package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a master with one replica, watched by three Sentinels under
// MasterName, with a quorum of two.
type Sentinel struct {
	Master, Replica *Node
	Sentinels       []*Node
}

// StartSentinel starts the master, its replica and three Sentinels, and
// waits until the replica is in sync and each Sentinel knows the replica
// and the two other Sentinels (so that they can agree on a failover). The
// Sentinels deem the master down after NodeTimeout.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	server, _ := binaries(t)
	dir := t.TempDir()
	s := &Sentinel{}
	port := freePort(t, false)
	s.Master = start(t, server, dir, "master-"+strconv.Itoa(port), port)
	port = freePort(t, false)
	s.Replica = start(t, server, dir, "replica-"+strconv.Itoa(port), port, "--replicaof", "127.0.0.1", strconv.Itoa(port0(s.Master)))
	waitFor(t, "the replica is in sync", func(ctx context.Context) (bool, error) {
		f, err := info(ctx, s.Replica.Addr, "replication")
		return err == nil && f["master_link_status"] == "up", nil
	})
	for range 3 {
		port := freePort(t, false)
		name := "sentinel-" + strconv.Itoa(port)
		conf := filepath.Join(dir, name+".conf")
		text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\nsentinel down-after-milliseconds %[1]s %[3]d\nsentinel failover-timeout %[1]s %[4]d\nsentinel parallel-syncs %[1]s 1\n",
			MasterName, port0(s.Master), NodeTimeout.Milliseconds(), sentinelFailoverTimeout.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		s.Sentinels = append(s.Sentinels, start(t, server, dir, name, port, conf, "--sentinel"))
	}
	for _, n := range s.Sentinels {
		waitFor(t, "sentinel "+n.Addr+" knows the others", func(ctx context.Context) (bool, error) {
			c := redis.NewSentinelClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			defer c.Close()
			replicas, err := c.Replicas(ctx, MasterName).Result()
			if err != nil || len(replicas) != 1 {
				return false, nil
			}
			others, err := c.Sentinels(ctx, MasterName).Result()
			return err == nil && len(others) == 2, nil
		})
	}
	return s
}

// port0 returns the port of n.
func port0(n *Node) int {
	p, _ := strconv.Atoi(n.Addr[strings.LastIndexByte(n.Addr, ':')+1:])
	return p
}

// URL returns the --redis-url of s: redis+sentinel://, the three
// Sentinels, and MasterName.
func (s *Sentinel) URL() string {
	addrs := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		addrs[i] = n.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + MasterName
}

// MasterAddr returns the address of the master as the first Sentinel that
// answers tells it.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	var last error
	for _, n := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		addr, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		_ = c.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1], nil
		}
		last = err
	}
	return "", fmt.Errorf("redistest: no sentinel names the master: %v", last)
}
