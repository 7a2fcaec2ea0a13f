// Package palisade is a client for Palisade, a lock service whose grants carry fencing
// tokens, over its HTTP/JSON API (docs/http-api.md), with the standard library only.
//
// Its shape is etcd's clientv3 concurrency package: a Client talks to the cluster; a
// Session is a lease kept alive in the background (its Lost channel is closed when the
// client can no longer vouch for it); a Mutex and an Election belong to a session.
//
//	c, err := palisade.New(palisade.Config{Endpoints: []string{"http://10.0.0.1:7001", "http://10.0.0.2:7001"}})
//	s, err := palisade.NewSession(ctx, c, palisade.WithTTL(10*time.Second))
//	m := palisade.NewMutex(s, "reports/nightly")
//	if err := m.Lock(ctx); err != nil { ... }
//	_, err = s.Put(ctx, "reports/nightly/out", data, palisade.WithFence(m)) // refused once the lock is lost
//	err = m.Unlock(ctx)
//
// Every call takes a context and returns by its deadline (plus WithdrawGrace for an
// acquire or campaign that has to take back a request whose outcome is unknown). Calls
// whose context has no deadline are bounded by Config.RequestTimeout, except waiting for a
// lock or a leadership, which waits until the context ends.
package palisade

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/url"
	"os"
	"sync"
	"time"
)

// Config of a Client. Only Endpoints is required.
type Config struct {
	// Endpoints: the nodes' client URLs, http(s)://host:port or ws(s)://host:port (the API
	// shares the websocket port). Any reachable node is enough.
	Endpoints []string
	// TLS for https endpoints: the CA that signs the nodes' certificates (RootCAs; nil: the
	// system's roots) and a client certificate for nodes that require one. See TLSConfig.
	TLS *tls.Config
	// Token: the bearer token of clusters with auth.
	Token string
	// ClusterID: the cluster to trust. Empty: the one the first answer names.
	ClusterID string
	// RequestTimeout bounds one call's retries when its context has no deadline. Default 10 s.
	RequestTimeout time.Duration
	// AttemptTimeout: how long one attempt on one node may go unanswered before the next
	// node. Default 2 s (a follower waits up to three election timeouts for a leader).
	AttemptTimeout time.Duration
	// MaxClockDrift: the assumed worst rate difference of client and server clocks. Default 0.01.
	MaxClockDrift float64
	// SafetyMargin subtracted from the safe deadline. Default max(50 ms, 5 % of the TTL).
	SafetyMargin time.Duration
	// Logger for sessions opened and lost, refused nodes, withdrawals. Nil: silent.
	Logger *log.Logger

	clock clock
	logf  func(format string, args ...any)
}

// TLSConfig builds a tls.Config from PEM files: the CA that signs the nodes' certificates
// (empty: the system's roots) and a client certificate and key (empty: none).
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, newError("INVALID_ARGUMENT", "CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, newError("INVALID_ARGUMENT", "CA file %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, newError("INVALID_ARGUMENT", "client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Client talks to one cluster. It is safe for concurrent use.
type Client struct {
	cfg Config
	t   *transport

	mu     sync.Mutex
	closed bool
	// Highest log index seen in an answer (grant tokens, write indexes): a grant to a
	// request sent after that must carry a higher token.
	seenIndex uint64
}

// New makes a client; it does not contact the cluster (sessions and calls do).
func New(cfg Config) (*Client, error) {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 2 * time.Second
	}
	if cfg.MaxClockDrift == 0 {
		cfg.MaxClockDrift = 0.01
	}
	if cfg.MaxClockDrift < 0 || cfg.MaxClockDrift >= 1 {
		return nil, newError("INVALID_ARGUMENT", "MaxClockDrift must be in [0, 1)")
	}
	if cfg.clock == nil {
		cfg.clock = realClock{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	cfg.logf = logger.Printf
	t, err := newTransport(&cfg)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, t: t}, nil
}

// ClusterID is the cluster this client trusts: configured, or pinned from the first answer.
func (c *Client) ClusterID() string { return c.t.pinnedCluster() }

// Close closes idle connections. Sessions are closed on their own (Session.Close).
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.t.close()
	return nil
}

func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return newError("CLOSED", "the client is closed")
	}
	return nil
}

// bounded gives ctx the client's request timeout when it has no deadline of its own.
func (c *Client) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.cfg.RequestTimeout)
}

// read is a GET (a linearizable read), bounded as every call.
func (c *Client) read(ctx context.Context, path string, query url.Values, out any) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	return c.t.call(ctx, "GET", path, query, nil, 0, out)
}

func (c *Client) noteIndex(i uint64) {
	c.mu.Lock()
	if i > c.seenIndex {
		c.seenIndex = i
	}
	c.mu.Unlock()
}

func (c *Client) indexFloor() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seenIndex
}

// checkToken: a grant to a request sent after index floor was seen is a later entry
// (tokens only grow); a lower token comes from a node that does not speak for this cluster.
func (c *Client) checkToken(token, floor uint64, what string) error {
	if token < floor {
		c.cfg.logf("palisade: %s was granted with token %d, below index %d already seen: refused", what, token, floor)
		return newError("TOKEN_REGRESSION", "%s was granted with token %d, below %d which this client has already seen", what, token, floor)
	}
	c.noteIndex(token)
	return nil
}

// Status of a node (role, term, leader, commit index ...), as the node answers it.
func (c *Client) Status(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	err := c.read(ctx, "/v1/status", nil, &out)
	return out, err
}

// Holder of a lock.
type Holder struct {
	Session int64
	Token   uint64
	Mode    string
}

// LockInfo is a lock as the cluster has it now (a linearizable read). A free lock has no holders.
type LockInfo struct {
	Name    string
	Holders []Holder
	Waiters []Holder // Token 0
	Limit   int
	Delayed bool
}

// LockInfo reads a lock's holders (with tokens) and waiters.
func (c *Client) LockInfo(ctx context.Context, name string) (LockInfo, error) {
	type wireHolder struct {
		Session int64           `json:"session"`
		Token   json.RawMessage `json:"token"`
		Mode    string          `json:"mode"`
	}
	var raw struct {
		Name    string       `json:"name"`
		Holders []wireHolder `json:"holders"`
		Waiters []wireHolder `json:"waiters"`
		Limit   *int         `json:"limit"`
		Delayed bool         `json:"delayed"`
	}
	if err := c.read(ctx, "/v1/lock", url.Values{"name": {name}}, &raw); err != nil {
		return LockInfo{}, err
	}
	info := LockInfo{Name: raw.Name, Delayed: raw.Delayed}
	if raw.Limit != nil {
		info.Limit = *raw.Limit
	}
	for _, h := range raw.Holders {
		tok, err := tokenOf(h.Token)
		if err != nil {
			return LockInfo{}, err
		}
		info.Holders = append(info.Holders, Holder{Session: h.Session, Token: tok, Mode: h.Mode})
	}
	for _, w := range raw.Waiters {
		info.Waiters = append(info.Waiters, Holder{Session: w.Session, Mode: w.Mode})
	}
	return info, nil
}
