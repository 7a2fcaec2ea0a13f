package palisade

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

func fakeClient(t *testing.T, clk clock, endpoints ...string) *Client {
	t.Helper()
	c, err := New(Config{Endpoints: endpoints, RequestTimeout: 2 * time.Second, clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TTL 3000 ms, drift 1 %, margin max(50 ms, 5 % of 3000) = 150 ms:
// safe deadline = send time + 3000 × 0.99 − 150 = send time + 2820 ms.
const (
	testTTL  = 3000 * time.Millisecond
	testSafe = 2820 * time.Millisecond
)

func TestLostClosesExactlyAtTheSafeDeadlineFromTheOpen(t *testing.T) {
	clk := newFakeClock()
	node := newFakeNode(t, "c")
	node.withSession(3000, func(*http.Request) bool { return false })
	node.route("/v1/lock/acquire", func(map[string]any, *http.Request) (int, any) {
		return 200, map[string]any{"status": "granted", "token": "9", "index": 9}
	})
	c := fakeClient(t, clk, node.URL)
	opened := clk.Now()
	s, err := NewSession(context.Background(), c, WithTTL(testTTL))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMutex(s, "x")
	if err := m.TryLock(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(testTTL / 3)
	until(t, "a keepalive at TTL/3", func() bool { return node.count("/v1/session/keepalive") == 1 })
	// Walk to one ms before the deadline. (While a keepalive is unanswered the next turn
	// is skipped; none is ever answered here.)
	for clk.Now().Add(100 * time.Millisecond).Before(opened.Add(testSafe)) {
		clk.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	clk.Advance(opened.Add(testSafe).Sub(clk.Now()) - time.Millisecond)
	time.Sleep(20 * time.Millisecond) // a timer that fired early would have closed it by now
	if isClosed(s.Lost()) || isClosed(m.Lost()) || s.Err() != nil || !m.Held() {
		t.Fatal("lost 1 ms before the safe deadline")
	}
	clk.Advance(time.Millisecond)
	until(t, "Lost at the safe deadline", func() bool { return isClosed(s.Lost()) && isClosed(m.Lost()) })
	if !errors.Is(s.Err(), ErrSessionExpired) || m.Held() {
		t.Fatalf("session error %v, held %v", s.Err(), m.Held())
	}
	until(t, "the cluster asked to close the session", func() bool { return node.count("/v1/session/close") == 1 })
}

func TestAnAcknowledgedKeepaliveMovesTheDeadlineToItsSendTime(t *testing.T) {
	clk := newFakeClock()
	node := newFakeNode(t, "c")
	answer := make(chan struct{})
	var mu sync.Mutex
	first := true
	node.withSession(3000, func(r *http.Request) bool {
		mu.Lock()
		isFirst := first
		first = false
		mu.Unlock()
		if !isFirst {
			return false
		}
		select { // the answer comes later than the send
		case <-answer:
		case <-r.Context().Done():
		}
		return true
	})
	c := fakeClient(t, clk, node.URL)
	opened := clk.Now()
	s, err := NewSession(context.Background(), c, WithTTL(testTTL))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(testTTL / 3)
	sent := opened.Add(testTTL / 3)
	until(t, "the first keepalive", func() bool { return node.count("/v1/session/keepalive") == 1 })
	clk.Advance(500 * time.Millisecond) // answered 500 ms after it was sent
	close(answer)
	until(t, "the deadline moved", func() bool { return s.SafeDeadline().Equal(sent.Add(testSafe)) })
	for clk.Now().Add(100 * time.Millisecond).Before(sent.Add(testSafe)) {
		clk.Advance(100 * time.Millisecond) // later keepalives go unanswered
		time.Sleep(time.Millisecond)
	}
	clk.Advance(sent.Add(testSafe).Sub(clk.Now()) - time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	if isClosed(s.Lost()) {
		t.Fatal("lost before the deadline the acknowledged keepalive earned (send time + 2820 ms)")
	}
	clk.Advance(time.Millisecond)
	until(t, "Lost at send time + 2820 ms", func() bool { return isClosed(s.Lost()) })
}

func TestValuesInBothForms(t *testing.T) {
	for _, tc := range []struct {
		json string
		want []byte
	}{
		{`{"value":"one","valueBase64":"b25l"}`, []byte("one")},
		{`{"valueBase64":"AP8="}`, []byte{0, 0xff}},
		{`{"value":"one","encoding":"utf8"}`, []byte("one")},
		{`{"value":"AP8=","encoding":"base64"}`, []byte{0, 0xff}},
		{`{"value":"aGk=","encoding":"utf8"}`, []byte("aGk=")},
		{`{"key":"k","revision":3}`, nil},
		{`{"key":"k","value":null,"revision":3}`, nil},
	} {
		var w wireEntry
		if err := json.Unmarshal([]byte(tc.json), &w); err != nil {
			t.Fatal(err)
		}
		got, err := w.bytes()
		if err != nil || string(got) != string(tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: got %q, %v; want %q", tc.json, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"value":"x","encoding":"rot13"}`, `{"value":"%%%","encoding":"base64"}`} {
		var w wireEntry
		_ = json.Unmarshal([]byte(bad), &w)
		if _, err := w.bytes(); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestAnswersInTheComingValueEncoding(t *testing.T) {
	node := newFakeNode(t, "c")
	node.route("/v1/kv", func(map[string]any, *http.Request) (int, any) {
		return 200, map[string]any{"key": "k", "value": "AP8=", "encoding": "base64", "revision": 9}
	})
	node.route("/v1/kv/watch", func(map[string]any, *http.Request) (int, any) {
		return 200, []sseEvent{
			{"snapshot", json.RawMessage(`{"prefix":"p/","entries":[{"key":"p/a","value":"one","encoding":"utf8","revision":4}]}`)},
			{"kvChanged", json.RawMessage(`{"key":"p/b","value":"AP8=","encoding":"base64","revision":5}`)},
			{"kvChanged", json.RawMessage(`{"key":"p/a","revision":6}`)},
		}
	})
	c := fakeClient(t, realClock{}, node.URL)
	kv, err := c.Get(context.Background(), "k")
	if err != nil || string(kv.Value) != "\x00\xff" || kv.Revision != 9 {
		t.Fatalf("Get: %+v, %v", kv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events := c.Watch(ctx, "p/", WithExistingKeys())
	want := []WatchEvent{{EventPut, "p/a", []byte("one"), 4}, {EventPut, "p/b", []byte{0, 0xff}, 5}, {EventDelete, "p/a", nil, 6}}
	for i, w := range want {
		got := <-events
		if got.Type != w.Type || got.Key != w.Key || string(got.Value) != string(w.Value) || got.Revision != w.Revision {
			t.Fatalf("event %d: got %+v, want %+v", i, got, w)
		}
	}
}

func TestANodeOfAnotherClusterIsRefusedAndNotAskedAgain(t *testing.T) {
	status := func(map[string]any, *http.Request) (int, any) { return 200, map[string]any{"id": "n"} }
	ours, theirs := newFakeNode(t, "ours"), newFakeNode(t, "theirs")
	ours.route("/v1/status", status)
	theirs.route("/v1/status", status)
	c, err := New(Config{Endpoints: []string{theirs.URL, ours.URL}, ClusterID: "ours"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := c.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if ours.count("/v1/status") != 5 || theirs.count("/v1/status") > 1 {
		t.Fatalf("ours %d, theirs %d", ours.count("/v1/status"), theirs.count("/v1/status"))
	}
	only, _ := New(Config{Endpoints: []string{theirs.URL}, ClusterID: "ours"})
	if _, err := only.Status(context.Background()); !errors.Is(err, ErrWrongCluster) || IsIndefinite(err) {
		t.Fatalf("got %v", err)
	}
}

func TestTheFirstAnswerPinsTheCluster(t *testing.T) {
	node := newFakeNode(t, "first")
	node.route("/v1/status", func(map[string]any, *http.Request) (int, any) { return 200, map[string]any{} })
	c := fakeClient(t, realClock{}, node.URL)
	if _, err := c.Status(context.Background()); err != nil || c.ClusterID() != "first" {
		t.Fatalf("%v, pinned %q", err, c.ClusterID())
	}
	node.setCluster("second") // the address now answers for another cluster
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrWrongCluster) {
		t.Fatalf("got %v", err)
	}
}

func TestAGrantBelowATokenAlreadySeenIsRefused(t *testing.T) {
	node := newFakeNode(t, "c")
	node.withSession(10000, func(*http.Request) bool { return true })
	node.route("/v1/kv/put", func(map[string]any, *http.Request) (int, any) {
		return 200, map[string]any{"revision": 100, "index": 100}
	})
	token := "50"
	node.route("/v1/lock/acquire", func(map[string]any, *http.Request) (int, any) {
		return 200, map[string]any{"status": "granted", "token": token, "index": 50}
	})
	node.route("/v1/lock/release", func(map[string]any, *http.Request) (int, any) { return 200, map[string]any{"index": 101} })
	c := fakeClient(t, realClock{}, node.URL)
	ctx := context.Background()
	s, err := NewSession(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(ctx, "k", []byte("v")); err != nil { // index 100 seen
		t.Fatal(err)
	}
	m := NewMutex(s, "x")
	err = m.TryLock(ctx)
	if !errors.Is(err, ErrTokenRegression) || IsIndefinite(err) || m.Held() {
		t.Fatalf("got %v, held %v", err, m.Held())
	}
	if node.count("/v1/lock/release") != 1 {
		t.Fatal("the grant it was told of is given back")
	}
	token = "120" // nothing of it is held here: the name is free to try again
	if err := m.TryLock(ctx); err != nil || m.Token() != 120 {
		t.Fatalf("%v, token %d", err, m.Token())
	}
}

func TestDefiniteAndIndefiniteErrors(t *testing.T) {
	node := newFakeNode(t, "c")
	node.route("/v1/status", func(map[string]any, *http.Request) (int, any) {
		return 504, map[string]any{"error": map[string]any{"code": "TIMEOUT", "message": "outcome unknown"}}
	})
	node.route("/v1/lock", func(map[string]any, *http.Request) (int, any) {
		return 409, map[string]any{"error": map[string]any{"code": "NOT_HOLDER", "message": "no", "currentToken": "42"}}
	})
	c := fakeClient(t, realClock{}, node.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Status(ctx)
	if !errors.Is(err, ErrTimeout) || !IsIndefinite(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("504 until the deadline: got %v", err)
	}
	_, err = c.LockInfo(context.Background(), "x")
	var e *Error
	if !errors.As(err, &e) || e.Code != "NOT_HOLDER" || e.CurrentToken != 42 || e.HTTPStatus != 409 || e.Indefinite {
		t.Fatalf("409: got %#v", err)
	}
	// Nothing listens: the request never left, so it certainly was not applied.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	dead := fakeClient(t, realClock{}, "http://"+addr)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := dead.Status(ctx2); !errors.Is(err, ErrUnavailable) || IsIndefinite(err) {
		t.Fatalf("refused: got %v", err)
	}
}

func TestTurnsAreFirstComeFirstServedAndBoundedByTheContext(t *testing.T) {
	var ts turns
	first, _ := ts.take(context.Background(), "x")
	if ts.tryTake("x") != nil {
		t.Fatal("tryTake while held")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if _, err := ts.take(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	cancel()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		queued := make(chan struct{})
		go func(i int) {
			defer wg.Done()
			go func() {
				// queued once the queue has grown by this waiter
				until(t, "queued", func() bool { ts.mu.Lock(); defer ts.mu.Unlock(); return len(ts.queues["x"]) == i+2 })
				close(queued)
			}()
			tn, _ := ts.take(context.Background(), "x")
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			tn.giveBack()
		}(i)
		<-queued
	}
	first.giveBack()
	first.giveBack() // once only
	wg.Wait()
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("order %v", order)
	}
	if ts.tryTake("x") == nil {
		t.Fatal("free again")
	}
}
