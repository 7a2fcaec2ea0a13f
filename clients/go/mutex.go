package palisade

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxLongPoll is the longest wait of one long-poll acquire (docs/http-api.md); a longer
// wait asks again.
const MaxLongPoll = 60 * time.Second

// WithdrawGrace: how long past its context's end an acquire or campaign waits for the
// cluster to confirm the withdrawal of a request whose outcome is unknown, before it
// returns anyway and goes on withdrawing in the background (docs/protocol.md section 10).
const WithdrawGrace = 100 * time.Millisecond

// pollMargin: a long poll asks the node to give up this much before the caller's
// deadline, so that the node's own answer ("timeout": nothing stays queued) arrives in time.
const pollMargin = 100 * time.Millisecond

// MutexOption configures NewMutex.
type MutexOption func(*Mutex)

// Shared makes the mutex a shared (reader) lock; limit > 0 makes it a semaphore of at most
// limit holders. Each holder is a session: N holders are N sessions.
func Shared(limit int) MutexOption {
	return func(m *Mutex) {
		m.mode = "shared"
		m.limit = limit
	}
}

// Fence is what a guarded write carries: the lock's name and the token it must be held with.
type Fence struct {
	Lock  string `json:"lock"`
	Token uint64 `json:"-"`
}

// Fencer is anything that fences a write: a Fence, a held Mutex, a leading Election.
type Fencer interface{ Fence() Fence }

// Fence is f itself.
func (f Fence) Fence() Fence { return f }

// Mutex is a lock of one session. Within a session, Lock and TryLock of one name take
// turns (first come, first served) before they reach the cluster: the cluster answers a
// second acquire of a name the session holds with the same grant and token, so a second
// holder would be a lie (its Unlock would free the first one's lock).
//
// Token is the fencing token of the current grant (0 before the first): the log index of
// the entry that granted it. It only grows, cluster-wide; send it with every write the lock
// protects. Lost is closed whenever the mutex does not hold the lock or can no longer be
// sure it does: its session's safe deadline passed or the session ended, it was unlocked,
// or a write fenced by it was refused.
type Mutex struct {
	held
	s     *Session
	name  string
	mode  string
	limit int
}

// NewMutex is a handle on lock name for the session; nothing is asked of the cluster yet.
func NewMutex(s *Session, name string, opts ...MutexOption) *Mutex {
	m := &Mutex{held: newHeld(), s: s, name: name, mode: "exclusive"}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name of the lock.
func (m *Mutex) Name() string { return m.name }

// Fence of writes guarded by this lock.
func (m *Mutex) Fence() Fence { return Fence{Lock: m.name, Token: m.Token()} }

// Held reports whether the mutex holds the lock, checking the session's deadline now.
func (m *Mutex) Held() bool {
	if m.s.Err() != nil {
		return false
	}
	select {
	case <-m.Lost():
		return false
	default:
		return true
	}
}

// Lock acquires the lock, waiting in the cluster's FIFO queue until it is granted or ctx
// ends (ErrLockTimeout, which also matches ctx's error). Nothing is left held or queued
// when it fails: an acquire whose outcome is unknown is withdrawn first.
func (m *Mutex) Lock(ctx context.Context) error { return m.acquire(ctx, true) }

// TryLock acquires the lock if it is free now; ErrLocked when someone holds it (another
// session, or another Mutex of this session).
func (m *Mutex) TryLock(ctx context.Context) error { return m.acquire(ctx, false) }

func lockTimeout(name string, ctx context.Context, withdrawn bool) *Error {
	msg := "lock " + name + " not granted before the context ended"
	if !withdrawn {
		msg += " (the cluster did not confirm the withdrawal in time: withdrawing in the background)"
	}
	cause := ctx.Err()
	if cause == nil { // within pollMargin of the deadline: nothing more can be waited for
		cause = context.DeadlineExceeded
	}
	return &Error{Code: "LOCK_TIMEOUT", Message: msg, Withdrawn: withdrawn, cause: cause}
}

func (m *Mutex) acquire(ctx context.Context, blocking bool) error {
	if err := m.s.c.checkOpen(); err != nil {
		return err
	}
	if m.Held() {
		return newError("INVALID_ARGUMENT", "this Mutex already holds %q: unlock it first", m.name)
	}
	if m.holdsTurn() {
		_ = m.Unlock(ctx) // lost meanwhile (fenced): released as Unlock would
	}
	if err := m.s.Err(); err != nil {
		return err
	}
	var t *turn
	if blocking {
		var err error
		if t, err = m.s.lockTurns.take(ctx, m.name); err != nil {
			return lockTimeout(m.name, ctx, true)
		}
	} else if t = m.s.lockTurns.tryTake(m.name); t == nil {
		return newError("LOCKED", "%q is held or being acquired through this session", m.name)
	}
	floor := m.s.c.indexFloor()
	token, err := m.acquireOn(ctx, blocking, t)
	if err == nil {
		err = m.s.c.checkToken(token, floor, "lock "+m.name)
		if err != nil { // give back what it was told of; past the grace, in the background
			gctx, cancel := context.WithTimeout(context.Background(), WithdrawGrace)
			_ = m.s.untilAnswered(gctx, "/v1/lock/release", map[string]any{"name": m.name, "token": uintString(token)}, nil, ErrNotHolder)
			cancel()
		}
	}
	if err != nil {
		t.giveBackUnlessHandedOff()
		return err
	}
	m.install(token, t)
	if !m.s.attach(m) {
		m.sessionLost(nil)
		return m.s.Err()
	}
	return nil
}

type acquireAnswer struct {
	Status string    `json:"status"`
	Token  jsonToken `json:"token"`
	Index  uint64    `json:"index"`
}

func (m *Mutex) fields() map[string]any {
	f := map[string]any{"name": m.name, "mode": m.mode}
	if m.limit > 0 {
		f["limit"] = m.limit
	}
	return f
}

// acquireOn sends acquires (long polls when blocking) until granted, busy (a try), the
// context ends, or an error; a request whose outcome is unknown is withdrawn first.
func (m *Mutex) acquireOn(ctx context.Context, blocking bool, t *turn) (uint64, error) {
	cfg := &m.s.c.cfg
	for {
		body := m.fields()
		seqs := 1
		var attempt time.Duration
		rctx, cancel := m.s.c.bounded(ctx)
		if blocking {
			wait := MaxLongPoll
			if dl, ok := ctx.Deadline(); ok {
				remaining := time.Until(dl)
				if remaining <= 0 {
					cancel()
					return 0, lockTimeout(m.name, ctx, true)
				}
				wait = minDuration(MaxLongPoll, maxDuration(remaining-pollMargin, remaining/2))
			} else {
				cancel()
				rctx, cancel = context.WithTimeout(ctx, wait+cfg.RequestTimeout)
			}
			// A long poll takes two seqs: the acquire and the withdrawal of its wait.
			body["waitMs"] = maxDuration(wait, time.Millisecond).Milliseconds()
			seqs = 2
			attempt = wait + cfg.AttemptTimeout
		}
		seq := m.s.takeSeqs(seqs)
		var r acquireAnswer
		err := m.s.send(rctx, "/v1/lock/acquire", body, seq, attempt, &r)
		cancel()
		if err != nil {
			if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrUnavailable) {
				m.s.settle(seq, seqs)
				return 0, err
			}
			// The outcome is unknown: a node may have granted or queued it (a long poll
			// answered 503 may have queued before its node failed to withdraw it). Take it
			// back before reporting, so no lock is held for nobody.
			withdrawn := m.withdraw(body, seq, seqs, t)
			if blocking && ctx.Err() != nil {
				return 0, lockTimeout(m.name, ctx, withdrawn)
			}
			return 0, err
		}
		m.s.settle(seq, seqs)
		switch {
		case r.Status == "granted" && r.Token > 0:
			return uint64(r.Token), nil
		case r.Status == "busy" && !blocking:
			return 0, newError("LOCKED", "%q is held", m.name)
		case r.Status == "timeout" && blocking:
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= pollMargin {
				return 0, lockTimeout(m.name, ctx, true)
			}
		default:
			return 0, malformed("acquire answered %q", r.Status)
		}
	}
}

// withdraw takes back an acquire whose outcome is unknown: the same request with the same
// seq tells what happened (a long poll retried with waitMs 1 withdraws a wait still
// queued), and a grant is released. True when confirmed within WithdrawGrace; otherwise it
// goes on in the background while the session lives, keeping the session's turn on the
// name (the next acquire of it waits), and settles the seqs when done.
func (m *Mutex) withdraw(body map[string]any, seq int64, seqs int, t *turn) bool {
	retry := map[string]any{}
	for k, v := range body {
		retry[k] = v
	}
	if seqs == 2 {
		retry["waitMs"] = 1
	}
	takeBack := func(ctx context.Context) bool {
		if m.s.Err() != nil {
			return true // the session's end frees everything
		}
		var r acquireAnswer
		err := m.s.send(ctx, "/v1/lock/acquire", retry, seq, 0, &r)
		if errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
			return false
		}
		if err != nil || r.Status != "granted" || r.Token == 0 {
			return true // a definite refusal, or nothing granted: nothing is held
		}
		m.s.c.cfg.logf("palisade: lock %q was granted (token %d) after its caller gave up: releasing it", m.name, r.Token)
		release := m.s.takeSeqs(1)
		defer m.s.settle(release, 1)
		err = m.s.send(ctx, "/v1/lock/release", map[string]any{"name": m.name, "token": uintString(uint64(r.Token))}, release, 0, nil)
		return err == nil || errors.Is(err, ErrNotHolder) || errors.Is(err, ErrSessionExpired)
	}
	return m.s.withdrawWithin(fmt.Sprintf("lock %q", m.name), t, takeBack, func() { m.s.settle(seq, seqs) })
}

// Unlock releases the lock: retried with its seq until the cluster answers, the session
// is over (which frees it too) or ctx ends (then it goes on in the background). A mutex
// that is not held, or already lost, is unlocked quietly.
func (m *Mutex) Unlock(ctx context.Context) error {
	t, token := m.giveUp()
	if t == nil {
		return nil
	}
	m.s.detach(m)
	if m.s.Err() != nil {
		t.giveBack()
		return nil
	}
	// Even a lock already lost is released by token while its session lives: harmless if
	// it is gone, and nothing can stay held.
	return m.s.untilAnswered(ctx, "/v1/lock/release", map[string]any{"name": m.name, "token": uintString(token)}, t, ErrNotHolder)
}
