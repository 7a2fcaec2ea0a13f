package palisade

// Last of the package's tests (files run in name order): it SIGKILLs the leader, and the
// cluster keeps two nodes afterwards. PALISADE_PIDS is "id:pid,...".

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLeaderSIGKILLWhileHoldingAndWaiting(t *testing.T) {
	eps := endpointsFrom(t, "PALISADE_ENDPOINTS", "PALISADE_PIDS")
	pids := map[string]int{}
	for _, p := range strings.Split(os.Getenv("PALISADE_PIDS"), ",") {
		id, pid, _ := strings.Cut(p, ":")
		pids[id], _ = strconv.Atoi(pid)
	}
	c := newClusterClient(t, eps)
	a := newClusterSession(t, c, WithTTL(5*time.Second))
	b := newClusterSession(t, c, WithTTL(5*time.Second))
	name := unique("failover")
	ma, mb := NewMutex(a, name), NewMutex(b, name)
	if err := ma.Lock(within(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- mb.Lock(within(t, 20*time.Second)) }()
	until(t, "b waits", func() bool {
		info, _ := c.LockInfo(context.Background(), name)
		return len(info.Waiters) == 1
	})
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := st["leader"].(string)
	if err := syscall.Kill(pids[leader], syscall.SIGKILL); err != nil {
		t.Fatalf("kill leader %q: %v", leader, err)
	}
	// Keepalives go on through the other nodes; the new leader gives every session a full
	// TTL, so the lock is never lost; the wait goes on at another node.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		if !ma.Held() {
			t.Fatal("lock lost during failover")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := ma.Unlock(within(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil || mb.Token() <= ma.Token() {
		t.Fatalf("the waiter after the failover: %v, token %d after %d", err, mb.Token(), ma.Token())
	}
	_ = mb.Unlock(context.Background())
}
