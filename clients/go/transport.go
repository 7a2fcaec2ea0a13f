package palisade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ClusterIDHeader names the cluster on every answer of the HTTP API.
const ClusterIDHeader = "Palisade-Cluster-Id"

// Nodes close a keep-alive connection idle for 5 s; one idle this long is closed first,
// so that a request never races that close.
const idleConnTimeout = 3 * time.Second

// Most bytes of one JSON answer read (a node's frame limit is 1 MiB by default).
const maxAnswerBytes = 16 << 20

type node struct {
	base    string // http(s)://host:port
	foreign string // the other cluster id it answered with
}

// transport is JSON over HTTP(S) to the cluster's nodes. A request goes to the current
// node; a connection failure, 503 or 504 moves to the next node (or the leader a node
// names) and retries the same body, hence the same seq, with backoff, until the context
// ends. net/http keeps one kept-alive connection per node for reuse (more only while
// requests overlap).
type transport struct {
	requests       *http.Client
	streams        *http.Client
	token          string
	attemptTimeout time.Duration
	logf           func(format string, args ...any)
	scheme         string

	mu        sync.Mutex
	nodes     []*node
	current   int
	clusterID string
}

// httpBase is http(s)://host:port of a node URL given as ws(s):// or http(s)://.
func httpBase(raw string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	switch {
	case strings.HasPrefix(s, "ws://"):
		s = "http://" + s[len("ws://"):]
	case strings.HasPrefix(s, "wss://"):
		s = "https://" + s[len("wss://"):]
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", newError("INVALID_ARGUMENT", "not a node URL: %q (expected http(s)://host:port or ws(s)://host:port)", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func newTransport(cfg *Config) (*transport, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, newError("INVALID_ARGUMENT", "Endpoints: give at least one node URL")
	}
	t := &transport{token: cfg.Token, attemptTimeout: cfg.AttemptTimeout, logf: cfg.logf, clusterID: cfg.ClusterID}
	for _, e := range cfg.Endpoints {
		base, err := httpBase(e)
		if err != nil {
			return nil, err
		}
		scheme := base[:strings.Index(base, ":")]
		if t.scheme != "" && t.scheme != scheme {
			return nil, newError("INVALID_ARGUMENT", "Endpoints: all http or all https, not both")
		}
		t.scheme = scheme
		t.nodes = append(t.nodes, &node{base: base})
	}
	t.current = randomIntn(len(t.nodes))
	dialer := &net.Dialer{Timeout: cfg.AttemptTimeout, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     cfg.TLS,
		TLSHandshakeTimeout: cfg.AttemptTimeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     idleConnTimeout,
	}
	t.requests = &http.Client{Transport: base}
	// Streams hold a connection each for as long as they last: not from the request pool.
	t.streams = &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: cfg.TLS, TLSHandshakeTimeout: cfg.AttemptTimeout, DisableKeepAlives: true}}
	return t, nil
}

func (t *transport) close() {
	t.requests.CloseIdleConnections()
}

func (t *transport) pick() *node {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 0; i < len(t.nodes); i++ {
		n := t.nodes[t.current%len(t.nodes)]
		if n.foreign == "" {
			return n
		}
		t.current++
	}
	return t.nodes[t.current%len(t.nodes)]
}

type leaderHint struct {
	ID        string `json:"id"`
	ClientURL string `json:"clientUrl"`
}

// moveOn makes the next attempt go elsewhere: to the leader a node named (a node not in
// the list is dialled with the same TLS trust as the seeds), else to the next node.
func (t *transport) moveOn(from *node, hint *leaderHint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if hint != nil && hint.ClientURL != "" {
		if base, err := httpBase(hint.ClientURL); err == nil && strings.HasPrefix(base, t.scheme+":") {
			for i, n := range t.nodes {
				if n.base == base {
					if n.foreign == "" && n != from {
						t.current = i
						return
					}
					base = ""
					break
				}
			}
			if base != "" {
				t.nodes = append(t.nodes, &node{base: base})
				t.current = len(t.nodes) - 1
				return
			}
		}
	}
	if t.nodes[t.current%len(t.nodes)] == from {
		t.current++
	}
}

func (t *transport) allForeign() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.nodes {
		if n.foreign == "" {
			return false
		}
	}
	return true
}

func (t *transport) pinnedCluster() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clusterID
}

// checkCluster pins the first cluster id seen and refuses a node that answers with another.
func (t *transport) checkCluster(n *node, h http.Header) error {
	got := h.Get(ClusterIDHeader)
	if got == "" {
		return nil // a node from before the header: nothing to compare
	}
	t.mu.Lock()
	if t.clusterID == "" {
		t.clusterID = got
		t.mu.Unlock()
		t.logf("palisade: pinned cluster %q (first answer, from %s)", got, n.base)
		return nil
	}
	if got == t.clusterID {
		t.mu.Unlock()
		return nil
	}
	first := n.foreign == ""
	n.foreign = got
	want := t.clusterID
	t.mu.Unlock()
	if first {
		t.logf("palisade: %s answers for cluster %q, not %q: refused, and not asked again", n.base, got, want)
	}
	return newError("WRONG_CLUSTER", "%s answers for cluster %q, not %q", n.base, got, want)
}

func (t *transport) newRequest(ctx context.Context, method, target string, body []byte, accept string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	return req, nil
}

// refusedByTLS: with TLS 1.3 a node refuses a client certificate after the client's side
// of the handshake is done, so the alert comes in place of the answer: the node refused
// the connection, not the request.
func refusedByTLS(err error) bool {
	return strings.Contains(err.Error(), "remote error: tls:")
}

// attempt is one request on one node. sent: the request may have reached the node.
func (t *transport) attempt(ctx context.Context, n *node, method, target string, body []byte, timeout time.Duration) (status int, answer []byte, header http.Header, sent bool, err error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wrote atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		},
	})
	req, err := t.newRequest(actx, method, n.base+target, body, "application/json")
	if err != nil {
		return 0, nil, nil, false, err
	}
	res, err := t.requests.Do(req)
	if err != nil {
		return 0, nil, nil, wrote.Load() && !refusedByTLS(err), err
	}
	defer res.Body.Close()
	answer, err = io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		return 0, nil, nil, true, err
	}
	return res.StatusCode, answer, res.Header, true, nil
}

type wireError struct {
	Code            string          `json:"code"`
	Message         string          `json:"message"`
	LeaderHint      *leaderHint     `json:"leaderHint"`
	CurrentToken    json.RawMessage `json:"currentToken"`
	CurrentRevision int64           `json:"currentRevision"`
}

// errorFrom is the typed error of an `{"error": {...}}` answer, and its wire code.
func errorFrom(answer []byte, status int) (*Error, *wireError) {
	var body struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(answer, &body) != nil || body.Error == nil {
		w := &wireError{Code: "INTERNAL", Message: fmt.Sprintf("HTTP %d without a JSON error", status)}
		return &Error{Code: "INTERNAL", Message: w.Message, HTTPStatus: status}, w
	}
	w := body.Error
	code := w.Code
	if c, ok := wireCodes[code]; ok {
		code = c
	}
	e := &Error{Code: code, Message: w.Message, HTTPStatus: status, CurrentRevision: w.CurrentRevision, Indefinite: w.Code == "TIMEOUT"}
	if tok, err := tokenOf(w.CurrentToken); err == nil {
		e.CurrentToken = tok
	}
	return e, w
}

// tokenOf reads a token: a decimal string (or a number from an older node); 0 for null.
func tokenOf(raw json.RawMessage) (uint64, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, malformed("token %q", s)
	}
	return v, nil
}

func malformed(format string, args ...any) *Error {
	return &Error{Code: "INTERNAL", Message: "malformed answer: " + fmt.Sprintf(format, args...)}
}

const internalRetries = 3

// random numbers for the first node and backoff jitter, seeded per process (the global
// source of Go 1.19 starts the same in every process).
var random = struct {
	sync.Mutex
	*rand.Rand
}{Rand: rand.New(rand.NewSource(time.Now().UnixNano()))}

func randomFloat() float64 {
	random.Lock()
	defer random.Unlock()
	return random.Float64()
}

func randomIntn(n int) int {
	random.Lock()
	defer random.Unlock()
	return random.Intn(n)
}

// call sends the request until a node gives a definite answer or ctx ends, and decodes a
// 2xx answer into out (when not nil). Errors: the typed error of a definite refusal;
// UNAVAILABLE when nothing reached a node that could apply it; TIMEOUT (indefinite) when
// it was sent and no definite answer came. attempt bounds one try on one node.
func (t *transport) call(ctx context.Context, method, path string, query url.Values, body any, attempt time.Duration, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return newError("INVALID_ARGUMENT", "%v", err)
		}
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	if attempt <= 0 {
		attempt = t.attemptTimeout
	}
	inDoubt := false
	var last error
	backoff := 25 * time.Millisecond
	internal := 0
	for tried := 1; ; tried++ {
		if ctx.Err() != nil {
			return giveUp(ctx, inDoubt, last)
		}
		n := t.pick()
		per := attempt
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < per {
			per = time.Until(dl)
		}
		status, answer, header, sent, err := t.attempt(ctx, n, method, target, data, per)
		var hint *leaderHint
		pause := false
		if err != nil {
			inDoubt = inDoubt || sent
			last = fmt.Errorf("%s: %w", n.base, err)
		} else if werr := t.checkCluster(n, header); werr != nil {
			if t.allForeign() {
				return werr // definite: no node of this client's cluster is known
			}
			last = werr
		} else if status/100 == 2 {
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(answer, out); err != nil {
				return malformed("%s: %v", path, err)
			}
			return nil
		} else {
			e, w := errorFrom(answer, status)
			last = e
			switch w.Code {
			case "NOT_LEADER", "UNAVAILABLE", "TIMEOUT":
				inDoubt = inDoubt || w.Code == "TIMEOUT"
				hint = w.LeaderHint
			case "RATE_LIMITED":
				pause = true
			case "INTERNAL":
				if internal++; internal > internalRetries {
					return e
				}
				pause = true
			default:
				return e
			}
		}
		t.moveOn(n, hint)
		// A pause after each round of the nodes, or when a node asks to slow down.
		if pause || tried%len(t.nodes) == 0 {
			jitter := time.Duration(float64(backoff) * (0.5 + randomFloat()))
			select {
			case <-ctx.Done():
			case <-time.After(jitter):
			}
			if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
		}
	}
}

func giveUp(ctx context.Context, inDoubt bool, last error) error {
	why := ""
	if last != nil {
		why = " (last: " + last.Error() + ")"
	}
	if inDoubt {
		return &Error{Code: "TIMEOUT", Indefinite: true, Message: "no definite answer before the deadline: the request may or may not have been applied" + why, cause: ctx.Err()}
	}
	var wrong *Error
	if errors.As(last, &wrong) && wrong.Code == "WRONG_CLUSTER" {
		return &Error{Code: "WRONG_CLUSTER", Message: wrong.Message, cause: ctx.Err()}
	}
	return &Error{Code: "UNAVAILABLE", Message: "no node could serve the request before the deadline" + why, cause: ctx.Err()}
}

// openStream opens a Server-Sent Events stream on the current node; the caller reads it
// until it breaks and then opens another (on the next node).
func (t *transport) openStream(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	n := t.pick()
	req, err := t.newRequest(ctx, "GET", n.base+path+"?"+query.Encode(), nil, "text/event-stream")
	if err != nil {
		return nil, err
	}
	res, err := t.streams.Do(req)
	if err != nil {
		t.moveOn(n, nil)
		return nil, &Error{Code: "UNAVAILABLE", Message: n.base + ": " + err.Error(), cause: err}
	}
	if werr := t.checkCluster(n, res.Header); werr != nil {
		res.Body.Close()
		t.moveOn(n, nil)
		return nil, werr
	}
	if res.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
		res.Body.Close()
		e, w := errorFrom(answer, res.StatusCode)
		if w.Code == "NOT_LEADER" || w.Code == "UNAVAILABLE" || w.Code == "TIMEOUT" {
			t.moveOn(n, w.LeaderHint)
		}
		return nil, e
	}
	return &streamBody{ReadCloser: res.Body, onBreak: func() { t.moveOn(n, nil) }}, nil
}

// streamBody moves the transport on when the stream it reads breaks.
type streamBody struct {
	io.ReadCloser
	onBreak func()
	once    sync.Once
}

func (s *streamBody) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if err != nil {
		s.once.Do(s.onBreak)
	}
	return n, err
}
