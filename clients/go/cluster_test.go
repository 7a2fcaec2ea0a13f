package palisade

// Against a real cluster: PALISADE_ENDPOINTS (the nodes' http URLs, comma-separated), set by
// test/clients/go-client.test.ts, which starts one; by hand, against `npm start`:
//   PALISADE_ENDPOINTS=http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003 go test ./...

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// endpointsFrom is the comma-separated list in env, the test skipped when env or any of
// the other variables it needs is not set.
func endpointsFrom(t *testing.T, env string, needs ...string) []string {
	t.Helper()
	for _, v := range append([]string{env}, needs...) {
		if os.Getenv(v) == "" {
			t.Skipf("%s is not set", v)
		}
	}
	return strings.Split(os.Getenv(env), ",")
}

func clusterEndpoints(t *testing.T) []string { return endpointsFrom(t, "PALISADE_ENDPOINTS") }

func unique(prefix string) string { return fmt.Sprintf("go/%s/%08x", prefix, randomIntn(1<<31)) }

func newClusterClient(t *testing.T, endpoints []string, opts ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{Endpoints: endpoints}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newClusterSession(t *testing.T, c *Client, opts ...SessionOption) *Session {
	t.Helper()
	s, err := NewSession(context.Background(), c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// relay forwards every request to one node; while swallow says so for a request, it
// forwards it but answers nothing (it cuts the connection), as a node that applied a write
// and then died, or a network that dropped the answer, would.
type relay struct {
	*httptest.Server
	swallow   atomic.Value // func(path string, body []byte) bool
	swallowed atomic.Int64
}

func newRelay(t *testing.T, target string) *relay {
	r := &relay{}
	r.swallow.Store(func(string, []byte) bool { return false })
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		out, _ := http.NewRequestWithContext(req.Context(), req.Method, target+req.URL.RequestURI(), bytes.NewReader(body))
		out.Header = req.Header.Clone()
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		defer res.Body.Close()
		answer, _ := io.ReadAll(res.Body)
		if r.swallow.Load().(func(string, []byte) bool)(req.URL.Path, body) {
			r.swallowed.Add(1)
			panic(http.ErrAbortHandler) // applied; the answer is lost
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(r.Close)
	return r
}

func TestLockStory(t *testing.T) {
	eps := clusterEndpoints(t)
	c := newClusterClient(t, eps)
	a, b := newClusterSession(t, c, WithLabel("go-a")), newClusterSession(t, c, WithLabel("go-b"))
	name := unique("story")
	ma, mb := NewMutex(a, name), NewMutex(b, name)
	if err := ma.Lock(within(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if !ma.Held() || ma.Token() == 0 {
		t.Fatal("not held after Lock")
	}
	if err := mb.TryLock(context.Background()); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	start := time.Now()
	err := mb.Lock(within(t, 300*time.Millisecond))
	var e *Error
	if !errors.As(err, &e) || e.Code != "LOCK_TIMEOUT" || !e.Withdrawn || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past its deadline: %v", err)
	}
	if took := time.Since(start); took > 300*time.Millisecond+WithdrawGrace+200*time.Millisecond {
		t.Fatalf("returned %v after a 300 ms deadline", took)
	}
	info, err := c.LockInfo(context.Background(), name)
	if err != nil || len(info.Waiters) != 0 || len(info.Holders) != 1 || info.Holders[0].Token != ma.Token() {
		t.Fatalf("the wait was withdrawn: %+v %v", info, err)
	}
	if err := ma.Unlock(context.Background()); err != nil || !isClosed(ma.Lost()) {
		t.Fatalf("Unlock: %v", err)
	}
	if err := mb.Lock(within(t, 5*time.Second)); err != nil || mb.Token() <= ma.Token() {
		t.Fatalf("Lock after the release: %v, token %d after %d", err, mb.Token(), ma.Token())
	}
	if err := mb.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAWaiterIsGrantedWhenTheHolderUnlocks(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	a, b := newClusterSession(t, c), newClusterSession(t, c)
	name := unique("handoff")
	ma, mb := NewMutex(a, name), NewMutex(b, name)
	if err := ma.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- mb.Lock(within(t, 10*time.Second)) }()
	until(t, "b waits", func() bool {
		info, _ := c.LockInfo(context.Background(), name)
		return len(info.Waiters) == 1
	})
	_ = ma.Unlock(context.Background())
	if err := <-got; err != nil || mb.Token() <= ma.Token() {
		t.Fatalf("%v, token %d after %d", err, mb.Token(), ma.Token())
	}
	_ = mb.Unlock(context.Background())
}

func TestGoroutinesOfOneSessionTakeTurnsAndNeverHoldTogether(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	s := newClusterSession(t, c)
	name := unique("turns")
	var inside, most int32
	var mu sync.Mutex
	tokens := map[uint64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				m := NewMutex(s, name)
				if err := m.Lock(within(t, 20*time.Second)); err != nil {
					errs <- err
					return
				}
				n := atomic.AddInt32(&inside, 1)
				for {
					old := atomic.LoadInt32(&most)
					if n <= old || atomic.CompareAndSwapInt32(&most, old, n) {
						break
					}
				}
				mu.Lock()
				tokens[m.Token()] = true
				mu.Unlock()
				time.Sleep(10 * time.Millisecond) // another holder now would overlap this one
				atomic.AddInt32(&inside, -1)
				if err := m.Unlock(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if most != 1 || len(tokens) != 15 {
		t.Fatalf("at most %d holders at once, %d distinct tokens of 15", most, len(tokens))
	}
}

func TestAnAcquireWhoseAnswerWasLostLeavesNothingHeld(t *testing.T) {
	eps := clusterEndpoints(t)
	r := newRelay(t, eps[0])
	// Every answer to the acquire is lost; the withdrawal (the same request with the same
	// seq and waitMs 1) gets through.
	r.swallow.Store(func(path string, body []byte) bool {
		return path == "/v1/lock/acquire" && !bytes.Contains(body, []byte(`"waitMs":1,`)) && !bytes.Contains(body, []byte(`"waitMs":1}`))
	})
	c := newClusterClient(t, []string{r.URL})
	other := newClusterClient(t, eps)
	s := newClusterSession(t, c)
	name := unique("lost-answer")
	err := NewMutex(s, name).Lock(within(t, time.Second))
	var e *Error
	if !errors.As(err, &e) || e.Code != "LOCK_TIMEOUT" || r.swallowed.Load() == 0 {
		t.Fatalf("got %v after %d lost answers", err, r.swallowed.Load())
	}
	if !e.Withdrawn { // not confirmed within the grace (a loaded machine): it must get there
		until(t, "withdrawn in the background", func() bool {
			info, _ := other.LockInfo(context.Background(), name)
			return len(info.Holders) == 0
		})
	}
	info, err := other.LockInfo(context.Background(), name)
	if err != nil || len(info.Holders) != 0 || len(info.Waiters) != 0 {
		t.Fatalf("held or queued for nobody: %+v %v", info, err)
	}
	if s.Err() != nil {
		t.Fatal("the session is alive and kept alive")
	}
}

func TestLostClosesAtTheSafeDeadlineWhenKeepalivesGoUnanswered(t *testing.T) {
	eps := clusterEndpoints(t)
	r := newRelay(t, eps[0])
	r.swallow.Store(func(path string, _ []byte) bool { return path == "/v1/session/keepalive" })
	c := newClusterClient(t, []string{r.URL})
	opened := time.Now()
	s := newClusterSession(t, c, WithTTL(time.Second))
	name := unique("lost")
	m := NewMutex(s, name)
	if err := m.TryLock(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("not lost within 3 s")
	}
	// Safe deadline: open sent + 1 s × 0.99 − max(50 ms, 5 % of 1 s) = + 940 ms.
	if lostAfter := time.Since(opened); lostAfter < 940*time.Millisecond {
		t.Fatalf("lost %v after the open, before the safe deadline", lostAfter)
	}
	// The cluster expires it after the TTL; another session then gets the lock.
	other := newClusterSession(t, newClusterClient(t, eps))
	later := NewMutex(other, name)
	if err := later.Lock(within(t, 5*time.Second)); err != nil || later.Token() <= m.Token() {
		t.Fatalf("%v, token %d after %d", err, later.Token(), m.Token())
	}
}

func TestKeyValueAndFencing(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	s := newClusterSession(t, c)
	ctx := context.Background()
	k := unique("kv")
	rev, err := s.Put(ctx, k, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := c.Get(ctx, k); err != nil || string(kv.Value) != "one" || kv.Revision != rev {
		t.Fatalf("%+v %v", kv, err)
	}
	if _, err := s.Put(ctx, k, []byte("two"), WithIfRevision(0)); !errors.Is(err, ErrConflict) {
		t.Fatalf("ifRevision 0 on an existing key: %v", err)
	}
	if _, err := s.Put(ctx, k, []byte{0, 0xff}, WithIfRevision(rev)); err != nil {
		t.Fatal(err)
	}
	if kv, _ := c.Get(ctx, k); !bytes.Equal(kv.Value, []byte{0, 0xff}) {
		t.Fatalf("binary value: %q", kv.Value)
	}
	m := NewMutex(s, unique("guard"))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, k, []byte("fenced"), WithFence(m)); err != nil {
		t.Fatal(err)
	}
	held := m.Fence()
	_ = m.Unlock(ctx)
	_, err = s.Put(ctx, k, []byte("late"), WithFence(held))
	var e *Error
	if !errors.As(err, &e) || e.Code != "FENCED" || e.Indefinite {
		t.Fatalf("a write fenced by a released lock: %v", err)
	}
	if existed, err := s.Delete(ctx, k); err != nil || !existed {
		t.Fatal(existed, err)
	}
	if kv, err := c.Get(ctx, k); err != nil || kv != nil {
		t.Fatal(kv, err)
	}
}

func TestAFencedWriteRefusedMarksTheMutexLost(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	s := newClusterSession(t, c)
	ctx := context.Background()
	m := NewMutex(s, unique("fenced"))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Freed behind the handle's back (a seq far ahead of the session's own).
	body := map[string]any{"session": s.ID(), "seq": 100000, "name": m.Name(), "token": uintString(m.Token())}
	if err := c.t.call(within(t, 5*time.Second), "POST", "/v1/lock/release", nil, body, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, unique("k"), []byte("late"), WithFence(m)); !errors.Is(err, ErrFenced) {
		t.Fatalf("got %v", err)
	}
	if !isClosed(m.Lost()) || m.Held() {
		t.Fatal("a mutex whose fenced write was refused is lost")
	}
	if err := m.Lock(within(t, 5*time.Second)); err != nil { // and can be taken again
		t.Fatal(err)
	}
	_ = m.Unlock(ctx)
}

func TestWatch(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	s := newClusterSession(t, c)
	ctx := within(t, 10*time.Second)
	p := unique("watch") + "/"
	if _, err := s.Put(ctx, p+"a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	events := c.Watch(ctx, p, WithExistingKeys())
	if e := <-events; e.Type != EventPut || e.Key != p+"a" || string(e.Value) != "one" {
		t.Fatalf("existing: %+v", e)
	}
	rev, _ := s.Put(ctx, p+"b", []byte{0, 't', 'w', 'o'})
	if e := <-events; e.Type != EventPut || e.Key != p+"b" || !bytes.Equal(e.Value, []byte{0, 't', 'w', 'o'}) || e.Revision != rev {
		t.Fatalf("put: %+v, revision %d", e, rev)
	}
	_, _ = s.Delete(ctx, p+"a")
	if e := <-events; e.Type != EventDelete || e.Key != p+"a" || e.Value != nil {
		t.Fatalf("delete: %+v", e)
	}
}

func TestElections(t *testing.T) {
	c := newClusterClient(t, clusterEndpoints(t))
	a, b := newClusterSession(t, c), newClusterSession(t, c)
	name := unique("election")
	ea, eb := NewElection(a, name), NewElection(b, name)
	ctx := within(t, 20*time.Second)
	if err := ea.Campaign(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := eb.Campaign(within(t, 300*time.Millisecond), "b"); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a second candidate's campaign past its deadline: %v", err)
	}
	states := c.Observe(ctx, name)
	if s := <-states; s.Value != "a" || s.Leader != a.ID() || s.Token != ea.Token() {
		t.Fatalf("observed %+v", s)
	}
	if err := ea.Proclaim(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if s := <-states; s.Value != "a2" {
		t.Fatalf("observed %+v", s)
	}
	got := make(chan error, 1)
	go func() { got <- eb.Campaign(ctx, "b") }()
	until(t, "b is a candidate", func() bool {
		lead, _ := c.Leader(ctx, name)
		return lead.Leader == a.ID()
	})
	time.Sleep(100 * time.Millisecond) // b's campaign reaches the queue
	if err := ea.Resign(ctx); err != nil || !isClosed(ea.Lost()) {
		t.Fatal(err)
	}
	if err := <-got; err != nil || eb.Token() <= ea.Token() {
		t.Fatalf("hand-over: %v, epoch %d after %d", err, eb.Token(), ea.Token())
	}
	for s := range states {
		if s.Leader == b.ID() {
			if s.Value != "b" {
				t.Fatalf("observed %+v", s)
			}
			break
		}
	}
	_ = eb.Resign(ctx)
}

func TestTrust(t *testing.T) {
	eps := clusterEndpoints(t)
	c := newClusterClient(t, eps)
	if _, err := c.Status(context.Background()); err != nil || c.ClusterID() != "palisade-test" {
		t.Fatalf("%v, pinned %q", err, c.ClusterID())
	}
	foreign := newClusterClient(t, eps, func(cfg *Config) { cfg.ClusterID = "some-other-cluster" })
	_, err := NewSession(within(t, time.Second), foreign)
	if !errors.Is(err, ErrWrongCluster) || IsIndefinite(err) || !strings.Contains(err.Error(), "palisade-test") {
		t.Fatalf("got %v", err)
	}
}

func TestPausedHolderExample(t *testing.T) {
	eps := clusterEndpoints(t)
	cmd := exec.Command("go", "run", "./examples/paused-holder")
	cmd.Env = append(os.Environ(), "PALISADE_ENDPOINTS="+strings.Join(eps, ","))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"late write refused: FENCED", "Lost() channel is closed"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
}
