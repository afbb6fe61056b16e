package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of redis-server processes.
type Cluster struct {
	// Masters are the nodes that held the slots when the cluster was made,
	// Replicas the others, Replicas[i] a replica of Masters[i].
	Masters, Replicas []*Node
}

// StartCluster starts a Redis Cluster of masters nodes (at least 3), each
// with replicas replicas, and waits until every slot is served and every
// replica is in sync. Its nodes detect a failed node after NodeTimeout.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	server, cli := binaries(t)
	dir := t.TempDir()
	var nodes []*Node
	for i := range masters * (1 + replicas) {
		port := freePort(t, true)
		name := "node-" + strconv.Itoa(port)
		nodes = append(nodes, start(t, server, dir, name, port,
			"--cluster-enabled", "yes", "--cluster-config-file", name+".conf",
			"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds())),
			"--cluster-replica-validity-factor", "0"))
		_ = i
	}
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	waitFor(t, "the cluster is ok", func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			s, err := c.ClusterInfo(ctx).Result()
			_ = c.Close()
			if err != nil {
				return false, nil
			}
			f := fields(s)
			if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" || f["cluster_known_nodes"] != strconv.Itoa(len(nodes)) {
				return false, nil
			}
		}
		return true, nil
	})
	c := &Cluster{}
	byAddr := map[string]*Node{}
	for _, n := range nodes {
		byAddr[n.Addr] = n
	}
	// Which node is whose replica: redis-cli decides.
	masterOf := map[string]string{}
	for _, n := range nodes {
		var f map[string]string
		waitFor(t, "the replication of "+n.Addr, func(ctx context.Context) (bool, error) {
			var err error
			f, err = info(ctx, n.Addr, "replication")
			if err != nil {
				return false, nil
			}
			return f["role"] == "master" || f["master_link_status"] == "up", nil
		})
		if f["role"] == "master" {
			c.Masters = append(c.Masters, n)
		} else {
			masterOf[n.Addr] = f["master_host"] + ":" + f["master_port"]
		}
	}
	for _, m := range c.Masters {
		for addr, of := range masterOf {
			if of == m.Addr {
				c.Replicas = append(c.Replicas, byAddr[addr])
			}
		}
	}
	return c
}

// URL returns the --redis-url of the cluster: redis+cluster:// and the
// masters as seeds.
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.Masters))
	for i, n := range c.Masters {
		addrs[i] = n.Addr
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Client returns a cluster client on c, closed when t ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	var addrs []string
	for _, n := range append(append([]*Node(nil), c.Masters...), c.Replicas...) {
		addrs = append(addrs, n.Addr)
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = client.Close() })
	return client
}
