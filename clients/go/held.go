package palisade

import "sync"

// held is what a Mutex and an Election share: the grant they hold (its token, and the
// session's turn on the name) and the Lost channel of that grant.
type held struct {
	mu    sync.Mutex
	token uint64
	turn  *turn
	lost  chan struct{}
	once  *sync.Once
}

// newHeld holds nothing: Lost is closed.
func newHeld() held {
	lost := make(chan struct{})
	close(lost)
	return held{lost: lost, once: &sync.Once{}}
}

// Token of the current grant (0 before the first).
func (h *held) Token() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// Lost is closed whenever the grant is not held, or can no longer be sure to be.
func (h *held) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// install records a new grant with a Lost channel of its own.
func (h *held) install(token uint64, t *turn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.token, h.turn, h.lost, h.once = token, t, make(chan struct{}), &sync.Once{}
}

// holdsTurn: a grant was installed and not given up (it may be lost).
func (h *held) holdsTurn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.turn != nil
}

// giveUp ends the grant here (Lost closes) and hands its turn and token to the caller, who
// releases it on the cluster; nil when nothing was held.
func (h *held) giveUp() (*turn, uint64) {
	h.mu.Lock()
	t, token := h.turn, h.token
	h.turn = nil
	h.mu.Unlock()
	if t != nil {
		h.markLost()
	}
	return t, token
}

func (h *held) markLost() {
	h.mu.Lock()
	lost, once := h.lost, h.once
	h.mu.Unlock()
	once.Do(func() { close(lost) })
}

// sessionLost: the session ended, and the grant with it; the name is free in the session.
func (h *held) sessionLost(error) {
	h.markLost()
	h.mu.Lock()
	t := h.turn
	h.mu.Unlock()
	if t != nil {
		t.giveBack()
	}
}

// fencedOut: a write fenced by this grant was refused.
func (h *held) fencedOut() { h.markLost() }
