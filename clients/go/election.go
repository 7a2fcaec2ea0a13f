package palisade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// LeaderState is an election's state: Leader is the leading session (0: nobody leads),
// Token its epoch (a fencing token).
type LeaderState struct {
	Election string
	Leader   int64
	Value    string
	Token    uint64
}

type wireLeader struct {
	Election string    `json:"election"`
	Leader   *int64    `json:"leader"`
	Value    *string   `json:"value"`
	Token    jsonToken `json:"token"`
}

func (w wireLeader) state(election string) LeaderState {
	s := LeaderState{Election: w.Election, Token: uint64(w.Token)}
	if s.Election == "" {
		s.Election = election
	}
	if w.Leader != nil {
		s.Leader = *w.Leader
	}
	if w.Value != nil {
		s.Value = *w.Value
	}
	return s
}

// Leader reads an election's leader (linearizable).
func (c *Client) Leader(ctx context.Context, election string) (LeaderState, error) {
	var w wireLeader
	if err := c.read(ctx, "/v1/election/leader", url.Values{"election": {election}}, &w); err != nil {
		return LeaderState{}, err
	}
	return w.state(election), nil
}

// Observe streams an election's state now and on every change until ctx ends (then the
// channel is closed), from a node's event stream; a broken stream is reopened on the next
// node, and its snapshot is sent only if it differs from the last state sent.
func (c *Client) Observe(ctx context.Context, election string) <-chan LeaderState {
	out := make(chan LeaderState)
	go func() {
		defer close(out)
		var last *LeaderState
		c.reopening(ctx, "/v1/election/observe", url.Values{"election": {election}}, func(ev sseEvent) bool {
			var w wireLeader
			if json.Unmarshal(ev.data, &w) != nil {
				return false
			}
			s := w.state(election)
			if last != nil && *last == s {
				return true
			}
			last = &s
			select {
			case out <- s:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out
}

// Election is one session's candidacy in an election: Campaign until it leads, Proclaim
// a value, Resign. Within a session, campaigns of one election take turns. Token is the
// epoch of the current leadership (0 before the first); Lost is closed whenever this
// session does not lead, or can no longer be sure it does.
type Election struct {
	held
	s     *Session
	name  string
	value string
}

// NewElection is a handle on election name for the session.
func NewElection(s *Session, name string) *Election {
	return &Election{held: newHeld(), s: s, name: name}
}

// Name of the election.
func (e *Election) Name() string { return e.name }

// Fence of writes guarded by this leadership.
func (e *Election) Fence() Fence { return Fence{Lock: e.name, Token: e.Token()} }

// Campaign stands the session as a candidate with value and returns once it leads, or
// when ctx ends (ErrLockTimeout; the candidacy is withdrawn, and a leadership won
// meanwhile resigned).
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := e.s.c.checkOpen(); err != nil {
		return err
	}
	if err := e.s.Err(); err != nil {
		return err
	}
	t, err := e.s.electionTurns.take(ctx, e.name)
	if err != nil {
		return lockTimeout(e.name, ctx, true)
	}
	floor := e.s.c.indexFloor()
	token, err := e.campaignOn(ctx, value, t)
	if err == nil {
		if err = e.s.c.checkToken(token, floor, "leadership of "+e.name); err != nil { // past the grace, in the background
			gctx, cancel := context.WithTimeout(context.Background(), WithdrawGrace)
			_ = e.s.untilAnswered(gctx, "/v1/election/resign", map[string]any{"election": e.name, "token": uintString(token)}, nil, ErrNotHolder, ErrConflict)
			cancel()
		}
	}
	if err != nil {
		t.giveBackUnlessHandedOff()
		return err
	}
	e.install(token, t)
	e.mu.Lock()
	e.value = value
	e.mu.Unlock()
	if !e.s.attach(e) {
		e.sessionLost(nil)
		return e.s.Err()
	}
	return nil
}

func (e *Election) campaignOn(ctx context.Context, value string, t *turn) (uint64, error) {
	fields := map[string]any{"election": e.name, "value": value}
	seq := e.s.takeSeqs(1)
	rctx, cancel := e.s.c.bounded(ctx)
	var r struct {
		Status string    `json:"status"`
		Token  jsonToken `json:"token"`
	}
	err := e.s.send(rctx, "/v1/election/campaign", fields, seq, 0, &r)
	cancel()
	if err != nil {
		if errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
			withdrawn := e.withdraw(fields, seq, t)
			if ctx.Err() != nil {
				return 0, lockTimeout(e.name, ctx, withdrawn)
			}
		} else {
			e.s.settle(seq, 1)
		}
		return 0, err
	}
	e.s.settle(seq, 1)
	if r.Status == "leader" && r.Token > 0 {
		return uint64(r.Token), nil
	}
	// Queued: read the leader every 50-250 ms until it is this session.
	pause := 50 * time.Millisecond
	for {
		st, err := e.s.c.Leader(ctx, e.name)
		if err == nil && st.Leader == e.s.id && st.Token > 0 {
			return st.Token, nil
		}
		if serr := e.s.Err(); serr != nil {
			return 0, serr
		}
		select {
		case <-ctx.Done():
			return 0, lockTimeout(e.name, ctx, e.withdraw(nil, 0, t))
		case <-time.After(pause):
		}
		if pause *= 2; pause > 250*time.Millisecond {
			pause = 250 * time.Millisecond
		}
	}
}

// withdraw leaves the election's queue, or steps down if elected meanwhile. campaign and
// seq: a campaign whose outcome is unknown, sent again first so that it is settled. True
// when confirmed within WithdrawGrace; otherwise it goes on in the background (keeping the
// session's turn on the election).
func (e *Election) withdraw(campaign map[string]any, seq int64, t *turn) bool {
	takeBack := func(ctx context.Context) bool {
		if e.s.Err() != nil {
			return true
		}
		if campaign != nil {
			err := e.s.send(ctx, "/v1/election/campaign", campaign, seq, 0, nil)
			if errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
				return false
			}
		}
		resign := e.s.takeSeqs(1)
		err := e.s.send(ctx, "/v1/election/resign", map[string]any{"election": e.name}, resign, 0, nil)
		e.s.settle(resign, 1)
		if err == nil || errors.Is(err, ErrSessionExpired) {
			return true
		}
		if !errors.Is(err, ErrConflict) {
			return !(errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable))
		}
		// No candidate: elected meanwhile, or never queued.
		st, err := e.s.c.Leader(ctx, e.name)
		if err != nil {
			return false
		}
		if st.Leader != e.s.id || st.Token == 0 {
			return true
		}
		resign = e.s.takeSeqs(1)
		defer e.s.settle(resign, 1)
		err = e.s.send(ctx, "/v1/election/resign", map[string]any{"election": e.name, "token": uintString(st.Token)}, resign, 0, nil)
		return err == nil || errors.Is(err, ErrNotHolder) || errors.Is(err, ErrConflict) || errors.Is(err, ErrSessionExpired)
	}
	settle := func() {
		if campaign != nil {
			e.s.settle(seq, 1)
		}
	}
	return e.s.withdrawWithin(fmt.Sprintf("election %q", e.name), t, takeBack, settle)
}

// Proclaim changes the value observers see; ErrNotHolder (and Lost) when no longer leading.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	err := e.s.sequenced(ctx, "/v1/election/proclaim", map[string]any{"election": e.name, "token": uintString(e.Token()), "value": value}, nil)
	if errors.Is(err, ErrNotHolder) {
		e.sessionLost(err)
	}
	if err == nil {
		e.mu.Lock()
		e.value = value
		e.mu.Unlock()
	}
	return err
}

// Resign steps down: retried until the cluster answers, the session is over, or ctx ends
// (then it goes on in the background). Not leading: nothing to do.
func (e *Election) Resign(ctx context.Context) error {
	t, token := e.giveUp()
	if t == nil {
		return nil
	}
	e.s.detach(e)
	if e.s.Err() != nil {
		t.giveBack()
		return nil
	}
	return e.s.untilAnswered(ctx, "/v1/election/resign", map[string]any{"election": e.name, "token": uintString(token)}, t, ErrNotHolder, ErrConflict)
}

// Leader reads the election's leader (linearizable).
func (e *Election) Leader(ctx context.Context) (LeaderState, error) { return e.s.c.Leader(ctx, e.name) }

// Observe streams the election's state (see Client.Observe).
func (e *Election) Observe(ctx context.Context) <-chan LeaderState { return e.s.c.Observe(ctx, e.name) }
