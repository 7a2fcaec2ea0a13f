package palisade

import (
	"context"
	"sync"
	"sync/atomic"
)

// turns per name inside one session, first come first served. A session holds a name once
// (the cluster answers a second acquire of a name the session holds with the same grant
// and token), so two goroutines of one session must not both believe they have it: they
// queue here before they reach the cluster.
type turns struct {
	mu     sync.Mutex
	queues map[string][]chan struct{}
}

// take waits for the turn on name; the context's error if it ends first.
func (t *turns) take(ctx context.Context, name string) (*turn, error) {
	ch := make(chan struct{})
	t.mu.Lock()
	if t.queues == nil {
		t.queues = map[string][]chan struct{}{}
	}
	q, busy := t.queues[name]
	t.queues[name] = append(q, ch)
	t.mu.Unlock()
	if !busy {
		return &turn{turns: t, name: name}, nil
	}
	select {
	case <-ch:
		return &turn{turns: t, name: name}, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	select {
	case <-ch: // handed the turn just as the context ended: pass it on
		t.mu.Unlock()
		t.giveBack(name)
		return nil, ctx.Err()
	default:
	}
	q = t.queues[name]
	for i, c := range q {
		if c == ch {
			t.queues[name] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	t.mu.Unlock()
	return nil, ctx.Err()
}

// tryTake is the turn if nobody in this session holds or waits for name now.
func (t *turns) tryTake(name string) *turn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queues == nil {
		t.queues = map[string][]chan struct{}{}
	}
	if _, busy := t.queues[name]; busy {
		return nil
	}
	t.queues[name] = []chan struct{}{make(chan struct{})}
	return &turn{turns: t, name: name}
}

func (t *turns) giveBack(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[name][1:]
	if len(q) == 0 {
		delete(t.queues, name)
		return
	}
	t.queues[name] = q
	close(q[0])
}

// turn is one holder's turn on a name, given back exactly once: by the handle that holds
// the name, or by a background withdrawal it was handed to.
type turn struct {
	turns     *turns
	name      string
	once      sync.Once
	handedOff atomic.Bool
}

func (t *turn) giveBack() { t.once.Do(func() { t.turns.giveBack(t.name) }) }

func (t *turn) giveBackUnlessHandedOff() {
	if !t.handedOff.Load() {
		t.giveBack()
	}
}
