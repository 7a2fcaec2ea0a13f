package palisade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// SessionOption configures NewSession.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	ttl   time.Duration
	label string
}

// WithTTL sets the session's TTL: how long the cluster keeps its locks after the client
// goes silent. Default 15 s (the nodes' default too).
func WithTTL(ttl time.Duration) SessionOption { return func(o *sessionOptions) { o.ttl = ttl } }

// WithLabel sets what lock tables and the status page show next to the session's locks.
// Default HOST:PID.
func WithLabel(label string) SessionOption { return func(o *sessionOptions) { o.label = label } }

// Session is one lease on the cluster, kept alive every TTL/3 in the background.
//
// Safe deadline (docs/protocol.md section 4, the TypeScript SDK's rule). The leader
// expires a session at (time it received the last keepalive) + TTL. The client only
// knows when it sent the keepalive, so it counts from the send:
//
//	safe deadline = send time of the last acknowledged keepalive (or of the open)
//	                + TTL × (1 − MaxClockDrift) − SafetyMargin
//
// When it passes, Lost() is closed, every Mutex and Election of the session is lost, and
// the client asks the cluster to close the session. A lost session is not renewed: make a
// new one. The fencing token still protects resources from a client that is wrong.
type Session struct {
	c      *Client
	id     int64
	ttl    time.Duration
	drift  float64
	margin time.Duration
	clk    clock

	mu         sync.Mutex
	safeUntil  time.Time
	nextSeq    int64
	unanswered map[int64]struct{}
	lostErr    error
	lost       chan struct{}
	handles    map[handle]struct{}
	stop       chan struct{}
	stopOnce   sync.Once

	lockTurns     turns
	electionTurns turns
}

// handle is a Mutex or Election held through the session: lost with it.
type handle interface{ sessionLost(err error) }

var errDeadline = &Error{Code: "SESSION_EXPIRED", Message: "no keepalive was acknowledged before the safe deadline: the lease may have expired"}

// NewSession opens a session. The context bounds the open (RequestTimeout without a deadline).
func NewSession(ctx context.Context, c *Client, opts ...SessionOption) (*Session, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	o := sessionOptions{ttl: 15 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.label == "" {
		host, _ := os.Hostname()
		o.label = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if o.ttl < time.Millisecond {
		return nil, newError("INVALID_ARGUMENT", "TTL must be at least 1 ms")
	}
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	sent := c.cfg.clock.Now()
	var r struct {
		Session int64 `json:"session"`
		TTLMs   int64 `json:"ttlMs"`
	}
	body := map[string]any{"ttlMs": o.ttl.Milliseconds(), "label": o.label}
	if err := c.t.call(ctx, "POST", "/v1/session/open", nil, body, 0, &r); err != nil {
		return nil, err
	}
	if r.Session <= 0 || r.TTLMs <= 0 {
		return nil, malformed("openSession")
	}
	s := &Session{
		c:          c,
		id:         r.Session,
		ttl:        time.Duration(r.TTLMs) * time.Millisecond,
		drift:      c.cfg.MaxClockDrift,
		clk:        c.cfg.clock,
		nextSeq:    1,
		unanswered: map[int64]struct{}{},
		lost:       make(chan struct{}),
		handles:    map[handle]struct{}{},
		stop:       make(chan struct{}),
	}
	s.margin = c.cfg.SafetyMargin
	if s.margin <= 0 {
		s.margin = maxDuration(50*time.Millisecond, s.ttl/20)
	}
	// The cluster starts the lease no earlier than it received the open.
	s.safeUntil = s.deadlineFrom(sent)
	c.cfg.logf("palisade: session %d opened (TTL %v)", s.id, s.ttl)
	// Armed before NewSession returns: the deadline runs from the open, whatever the scheduler does.
	ka := s.clk.NewTimer(s.ttl / 3)
	dl := s.clk.NewTimer(s.safeUntil.Sub(s.clk.Now()))
	go s.keepAlive(ka, dl)
	return s, nil
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// ID is the session's id (the log index of the entry that opened it).
func (s *Session) ID() int64 { return s.id }

// TTL the cluster granted.
func (s *Session) TTL() time.Duration { return s.ttl }

// Lost is closed when the client can no longer vouch for the session: its safe deadline
// passed without an acknowledged keepalive, the cluster said it expired, or it was closed.
func (s *Session) Lost() <-chan struct{} { return s.lost }

// SafeDeadline is the instant until which the cluster will not have expired the session.
func (s *Session) SafeDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.safeUntil
}

// Err is nil while the session is live, else why it is over. It checks the deadline at the
// moment it is asked, so it is right at once after the process was paused, before the
// keepalive goroutine has run.
func (s *Session) Err() error {
	s.mu.Lock()
	err, until := s.lostErr, s.safeUntil
	s.mu.Unlock()
	if err == nil && !s.clk.Now().Before(until) {
		s.lose(errDeadline, true)
		return s.lostReason()
	}
	return err
}

func (s *Session) live() bool { return s.Err() == nil }

func (s *Session) lostReason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

func (s *Session) deadlineFrom(sent time.Time) time.Time {
	return sent.Add(time.Duration(float64(s.ttl)*(1-s.drift)) - s.margin)
}

// extend: a keepalive sent at `sent` was acknowledged.
func (s *Session) extend(sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.deadlineFrom(sent); s.lostErr == nil && d.After(s.safeUntil) {
		s.safeUntil = d
	}
}

type keepAliveResult struct {
	sent time.Time
	err  error
}

// keepAlive sends a keepalive every TTL/3 and ends the session at its safe deadline.
// A keepalive the cluster does not answer never holds up the deadline.
func (s *Session) keepAlive(ka, dl timer) {
	every := s.ttl / 3
	defer ka.Stop()
	defer dl.Stop()
	results := make(chan keepAliveResult, 1)
	inFlight := false
	for {
		select {
		case <-s.stop:
			return
		case <-dl.C():
			until := s.SafeDeadline()
			if now := s.clk.Now(); !now.Before(until) {
				s.lose(errDeadline, true)
				return
			} else {
				dl.Reset(until.Sub(now))
			}
		case <-ka.C():
			ka.Reset(every)
			if inFlight {
				continue // its retries end by this turn; the next one starts afresh
			}
			inFlight = true
			sent := s.clk.Now()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), every)
				defer cancel()
				err := s.c.t.call(ctx, "POST", "/v1/session/keepalive", nil, map[string]any{"session": s.id}, 0, nil)
				results <- keepAliveResult{sent, err}
			}()
		case r := <-results:
			inFlight = false
			switch {
			case r.err == nil:
				s.extend(r.sent)
				dl.Reset(s.SafeDeadline().Sub(s.clk.Now()))
			case errors.Is(r.err, ErrSessionExpired):
				s.lose(r.err, false)
				return
			default:
				s.c.cfg.logf("palisade: keepalive of session %d: %v", s.id, r.err)
			}
		}
	}
}

// lose ends the session here. When the client gave up on it while the cluster may still
// hold it (closeOnServer), it asks the cluster to close it, so its locks do not outlive
// the client's belief in them.
func (s *Session) lose(err error, closeOnServer bool) {
	s.mu.Lock()
	if s.lostErr != nil {
		s.mu.Unlock()
		return
	}
	s.lostErr = err
	close(s.lost)
	handles := s.handles
	s.handles = nil
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	for h := range handles {
		h.sessionLost(err)
	}
	s.c.cfg.logf("palisade: session %d ended: %v", s.id, err)
	if closeOnServer {
		seq := s.takeSeqs(1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.RequestTimeout)
			defer cancel()
			_ = s.send(ctx, "/v1/session/close", map[string]any{}, seq, 0, nil)
			s.settle(seq, 1)
		}()
	}
}

// attach ties h to the session's end; false when the session is already over.
func (s *Session) attach(h handle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostErr != nil {
		return false
	}
	s.handles[h] = struct{}{}
	return true
}

func (s *Session) detach(h handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.handles, h)
}

// Close closes the session on the cluster (releasing what it holds; one attempt is waited
// for at most, else it expires on its own) and stops its keepalives. Idempotent.
func (s *Session) Close() error {
	var err error
	if s.live() {
		ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.AttemptTimeout)
		seq := s.takeSeqs(1)
		err = s.send(ctx, "/v1/session/close", map[string]any{}, seq, 0, nil)
		s.settle(seq, 1)
		cancel()
		if errors.Is(err, ErrSessionExpired) {
			err = nil
		}
	}
	s.lose(&Error{Code: "CLOSED", Message: "the session was closed"}, false)
	return err
}

// ---- exactly-once numbering (docs/protocol.md section 5) ----------------------------------

// takeSeqs reserves n consecutive seqs (a long-poll acquire takes two); returns the first.
func (s *Session) takeSeqs(n int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.nextSeq
	for i := 0; i < n; i++ {
		s.unanswered[first+int64(i)] = struct{}{}
	}
	s.nextSeq += int64(n)
	return first
}

// settle: answered, or given up on; never sent again, so the node may forget the answers.
func (s *Session) settle(first int64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		delete(s.unanswered, first+int64(i))
	}
}

// ackedSeq: the highest seq with every seq at or below it settled.
func (s *Session) ackedSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	lowest := s.nextSeq
	for q := range s.unanswered {
		if q < lowest {
			lowest = q
		}
	}
	return lowest - 1
}

// send is one session-scoped write with the given seq, retried with it until ctx ends.
func (s *Session) send(ctx context.Context, path string, fields map[string]any, seq int64, attempt time.Duration, out any) error {
	body := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		body[k] = v
	}
	body["session"] = s.id
	body["seq"] = seq
	if acked := s.ackedSeq(); acked > 0 {
		if acked >= seq {
			acked = seq - 1
		}
		body["ackedSeq"] = acked
	}
	var raw json.RawMessage
	err := s.c.t.call(ctx, "POST", path, nil, body, attempt, &raw)
	if errors.Is(err, ErrSessionExpired) {
		s.lose(err, false)
	}
	if err != nil {
		return err
	}
	var indexed struct {
		Index uint64 `json:"index"`
	}
	if json.Unmarshal(raw, &indexed) == nil && indexed.Index > 0 {
		s.c.noteIndex(indexed.Index)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return malformed("%s: %v", path, err)
		}
	}
	return nil
}

// sequenced is a write with a seq of its own, bounded as every call.
func (s *Session) sequenced(ctx context.Context, path string, fields map[string]any, out any) error {
	if err := s.c.checkOpen(); err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	ctx, cancel := s.c.bounded(ctx)
	defer cancel()
	seq := s.takeSeqs(1)
	defer s.settle(seq, 1)
	return s.send(ctx, path, fields, seq, 0, out)
}

// untilAnswered is a release or resign: retried with its seq until the cluster answers,
// the session is over (which frees it too) or ctx ends. The codes in done mean it is not
// held: done. If ctx ends first, it goes on in the background; the turn (when given) is
// given back once it is done.
func (s *Session) untilAnswered(ctx context.Context, path string, fields map[string]any, t *turn, done ...*Error) error {
	seq := s.takeSeqs(1)
	try := func(ctx context.Context) (bool, error) {
		if !s.live() {
			return true, nil
		}
		err := s.send(ctx, path, fields, seq, 0, nil)
		if err == nil || errors.Is(err, ErrSessionExpired) {
			return true, nil
		}
		for _, d := range done {
			if errors.Is(err, d) {
				return true, nil
			}
		}
		return !(errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable)), err
	}
	finish := func() {
		s.settle(seq, 1)
		if t != nil {
			t.giveBack()
		}
	}
	for ctx.Err() == nil {
		actx, cancel := s.c.bounded(ctx)
		ok, err := try(actx)
		cancel()
		if ok {
			finish()
			return err
		}
	}
	err := &Error{Code: "TIMEOUT", Indefinite: true, Message: path + " not confirmed before the deadline: going on in the background", cause: ctx.Err()}
	go func() {
		defer finish()
		for {
			actx, cancel := context.WithTimeout(context.Background(), s.c.cfg.RequestTimeout)
			ok, _ := try(actx)
			cancel()
			if ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return err
}

// withdrawWithin runs takeBack (a withdrawal of a request whose outcome is unknown) for at
// most WithdrawGrace. Confirmed: settle runs, true. Otherwise it goes on in the background
// (each try bounded by RequestTimeout) while keeping t, the session's turn on the name,
// which it gives back when done, after settle: false.
func (s *Session) withdrawWithin(what string, t *turn, takeBack func(context.Context) bool, settle func()) bool {
	ctx, cancel := context.WithTimeout(context.Background(), WithdrawGrace)
	done := takeBack(ctx)
	cancel()
	if done {
		settle()
		return true
	}
	s.c.cfg.logf("palisade: %s: the cluster did not confirm the withdrawal in time; withdrawing in the background", what)
	t.handedOff.Store(true)
	go func() {
		defer t.giveBack()
		defer settle()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.RequestTimeout)
			ok := takeBack(ctx)
			cancel()
			if ok {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return false
}
