package palisade

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand; timers fire when it passes their time.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_000_000, 0), timers: map[*fakeTimer]struct{}{}}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTimer(d time.Duration) timer {
	t := &fakeTimer{clk: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock by d and fires the timers that came due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	var due []*fakeTimer
	for t := range f.timers {
		if !t.at.After(now) {
			due = append(due, t)
			delete(f.timers, t)
		}
	}
	f.mu.Unlock()
	for _, t := range due {
		select {
		case t.c <- now:
		default:
		}
	}
}

type fakeTimer struct {
	clk *fakeClock
	at  time.Time
	c   chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	_, armed := t.clk.timers[t]
	delete(t.clk.timers, t)
	return armed
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.Stop()
	select {
	case <-t.c:
	default:
	}
	t.clk.mu.Lock()
	t.at = t.clk.now.Add(d)
	if d <= 0 {
		t.clk.mu.Unlock()
		t.c <- t.at
		return
	}
	t.clk.timers[t] = struct{}{}
	t.clk.mu.Unlock()
}

// fakeNode stands in for a node where a test needs answers a real cluster would not give
// (another cluster's id, a token that went backwards, the value encoding of a newer node,
// a keepalive held unanswered). Each route answers from the request's JSON body.
type fakeNode struct {
	*httptest.Server
	clusterID string
	mu        sync.Mutex
	routes    map[string]func(body map[string]any, r *http.Request) (int, any)
	seen      []string
}

func newFakeNode(t *testing.T, clusterID string) *fakeNode {
	f := &fakeNode{clusterID: clusterID, routes: map[string]func(map[string]any, *http.Request) (int, any){}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{}
		if raw, _ := io.ReadAll(r.Body); len(raw) > 0 {
			_ = json.Unmarshal(raw, &body)
		}
		for k, v := range r.URL.Query() {
			body[k] = v[0]
		}
		f.mu.Lock()
		f.seen = append(f.seen, r.URL.Path)
		route := f.routes[r.URL.Path]
		id := f.clusterID
		f.mu.Unlock()
		w.Header().Set(ClusterIDHeader, id)
		if route == nil {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"error":{"code":"UNKNOWN_OP","message":"no such path"}}`))
			return
		}
		status, answer := route(body, r)
		if events, ok := answer.([]sseEvent); ok {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(status)
			for _, e := range events {
				_, _ = w.Write([]byte("event: " + e.name + "\ndata: " + string(e.data) + "\n\n"))
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeNode) route(path string, fn func(body map[string]any, r *http.Request) (int, any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[path] = fn
}

func (f *fakeNode) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.seen {
		if p == path {
			n++
		}
	}
	return n
}

func (f *fakeNode) setCluster(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusterID = id
}

// withSession gives the fake node session 7 with the given TTL; keepalives answer ack().
func (f *fakeNode) withSession(ttlMs int, ack func(r *http.Request) bool) {
	f.route("/v1/session/open", func(map[string]any, *http.Request) (int, any) {
		return 200, map[string]any{"session": 7, "ttlMs": ttlMs}
	})
	f.route("/v1/session/keepalive", func(_ map[string]any, r *http.Request) (int, any) {
		if !ack(r) {
			<-r.Context().Done() // a node that says nothing
			return 503, nil
		}
		return 200, map[string]any{"ttlMs": ttlMs}
	})
	f.route("/v1/session/close", func(map[string]any, *http.Request) (int, any) { return 200, map[string]any{"index": 1} })
}

// until polls cond (real time) for what a goroutine does in response to the test.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
