// The Go client's conformance runner: plays every scenario of test/conformance/scenarios.json
// against the cluster of PALISADE_ENDPOINTS, with PALISADE_CONTROL for faults
// (test/conformance/README.md).
//
//	go run ./cmd/conformance SCENARIOS.json
//	go run ./cmd/conformance --bench N      (acquire + release pairs)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	palisade "palisade/client"
)

type step map[string]any

func (s step) str(k string) string { v, _ := s[k].(string); return v }

func (s step) num(k string) float64 { v, _ := s[k].(float64); return v }

func (s step) has(k string) bool { _, ok := s[k]; return ok }

type scenario struct {
	ID    string `json:"id"`
	Steps []step `json:"steps"`
}

var (
	endpoints = strings.Split(os.Getenv("PALISADE_ENDPOINTS"), ",")
	control   = os.Getenv("PALISADE_CONTROL")
)

func post(path string) (map[string]any, error) {
	res, err := http.Post(control+path, "application/json", nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("control %s: %s", path, body)
	}
	return out, nil
}

type failure string

func (f failure) Error() string { return string(f) }

func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return failure(fmt.Sprintf(format, args...))
}

// eventually polls cond every 50 ms until it holds or withinMs passes (0: once).
func eventually(withinMs float64, cond func() bool, what func() string) error {
	deadline := time.Now().Add(time.Duration(withinMs) * time.Millisecond)
	for !cond() {
		if time.Now().After(deadline) {
			return failure(what())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// outcome of an acquire or a campaign: granted | leader | timeout | busy, and the token.
type outcome struct {
	kind  string
	token uint64
}

type actor struct {
	c       *palisade.Client
	ttl     time.Duration
	label   string
	relay   string
	s       *palisade.Session
	mu      sync.Mutex
	locks   map[string]*palisade.Mutex
	leads   map[string]*palisade.Election
	cancels []context.CancelFunc
}

// session is the actor's live session: a lost one is replaced, as an application would.
func (a *actor) session() (*palisade.Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.s != nil && a.s.Err() == nil {
		return a.s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := palisade.NewSession(ctx, a.c, palisade.WithTTL(a.ttl), palisade.WithLabel(a.label))
	if err != nil {
		return nil, err
	}
	a.s = s
	return s, nil
}

// seen is what an observe or a watch sent, and how far observed/watched have matched.
type seen struct {
	mu     sync.Mutex
	items  [][2]*string
	cursor int
}

type run struct {
	prefix string
	actors map[string]*actor
	vars   map[string]uint64
	tasks  map[string]chan result
	seen   map[string]*seen
	reader *palisade.Client
}

type result struct {
	o   outcome
	err error
}

func (r *run) name(x string) string { return r.prefix + x }

func (r *run) actor(s step) (*actor, error) {
	a := r.actors[s.str("actor")]
	if a == nil {
		return nil, failure("no actor " + s.str("actor"))
	}
	return a, nil
}

func (r *run) expect(s step, o outcome) error {
	if err := check(o.kind == s.str("expect"), "%s: expected %s, got %s", s.str("op"), s.str("expect"), o.kind); err != nil {
		return err
	}
	if s.has("token") && o.token > 0 {
		r.vars[s.str("token")] = o.token
	}
	return nil
}

func (r *run) acquire(a *actor, s step) (outcome, error) {
	sess, err := a.session()
	if err != nil {
		return outcome{}, err
	}
	name := r.name(s.str("lock"))
	m := palisade.NewMutex(sess, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.num("waitMs"))*time.Millisecond)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		if errors.Is(err, palisade.ErrLockTimeout) {
			return outcome{kind: "timeout"}, nil
		}
		return outcome{}, err
	}
	a.mu.Lock()
	a.locks[name] = m
	a.mu.Unlock()
	return outcome{"granted", m.Token()}, nil
}

func (r *run) campaign(a *actor, s step) (outcome, error) {
	sess, err := a.session()
	if err != nil {
		return outcome{}, err
	}
	name := r.name(s.str("election"))
	e := palisade.NewElection(sess, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.num("waitMs"))*time.Millisecond)
	defer cancel()
	if err := e.Campaign(ctx, s.str("value")); err != nil {
		if errors.Is(err, palisade.ErrLockTimeout) {
			return outcome{kind: "timeout"}, nil
		}
		return outcome{}, err
	}
	a.mu.Lock()
	a.leads[name] = e
	a.mu.Unlock()
	return outcome{"leader", e.Token()}, nil
}

func (r *run) async(s step, f func(*actor, step) (outcome, error)) error {
	a, err := r.actor(s)
	if err != nil {
		return err
	}
	ch := make(chan result, 1)
	r.tasks[s.str("task")] = ch
	go func() {
		o, err := f(a, s)
		ch <- result{o, err}
	}()
	return nil
}

func (r *run) collect(task string, a *actor, each func(ctx context.Context, add func(key, value *string))) {
	sn := &seen{}
	r.seen[task] = sn
	ctx, cancel := context.WithCancel(context.Background())
	a.cancels = append(a.cancels, cancel)
	go each(ctx, func(key, value *string) {
		sn.mu.Lock()
		sn.items = append(sn.items, [2]*string{key, value})
		sn.mu.Unlock()
	})
}

func (r *run) matched(s step) error {
	sn := r.seen[s.str("task")]
	if sn == nil {
		return failure("no task " + s.str("task"))
	}
	var key *string
	if s.has("key") {
		k := r.name(s.str("key"))
		key = &k
	}
	want := s.str("value")
	return eventually(s.num("withinMs"), func() bool {
		sn.mu.Lock()
		defer sn.mu.Unlock()
		for i := sn.cursor; i < len(sn.items); i++ {
			k, v := sn.items[i][0], sn.items[i][1]
			if (key == nil || (k != nil && *k == *key)) && v != nil && *v == want {
				sn.cursor = i + 1
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("%s: %s not seen (%d items)", s.str("op"), want, len(sn.items)) })
}

// within runs f with a context that ends after d.
func within(d time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return f(ctx)
}

func (r *run) step(s step) error {
	op := s.str("op")
	var a *actor
	if s.has("actor") && op != "open" {
		var err error
		if a, err = r.actor(s); err != nil {
			return err
		}
	}
	switch op {
	case "open":
		a = &actor{ttl: 10 * time.Second, label: "conformance-" + s.str("actor"), locks: map[string]*palisade.Mutex{}, leads: map[string]*palisade.Election{}}
		if s.has("ttlMs") {
			a.ttl = time.Duration(s.num("ttlMs")) * time.Millisecond
		}
		eps := endpoints
		if s.str("via") == "relay" {
			out, err := post("/relay")
			if err != nil {
				return err
			}
			a.relay = fmt.Sprint(out["hostPort"])
			eps = []string{"http://" + a.relay}
		}
		c, err := palisade.New(palisade.Config{Endpoints: eps})
		if err != nil {
			return err
		}
		a.c = c
		r.actors[s.str("actor")] = a
		_, err = a.session()
		return err
	case "acquire":
		t0 := time.Now()
		o, err := r.acquire(a, s)
		if err != nil {
			return err
		}
		if err := r.expect(s, o); err != nil {
			return err
		}
		if s.has("withinMs") {
			took := time.Since(t0)
			return check(took <= time.Duration(s.num("withinMs"))*time.Millisecond, "acquire took %v", took)
		}
		return nil
	case "acquireAsync":
		return r.async(s, r.acquire)
	case "campaign":
		o, err := r.campaign(a, s)
		if err != nil {
			return err
		}
		return r.expect(s, o)
	case "campaignAsync":
		return r.async(s, r.campaign)
	case "await":
		ch := r.tasks[s.str("task")]
		if ch == nil {
			return failure("no task " + s.str("task"))
		}
		res := <-ch
		if res.err != nil {
			return res.err
		}
		return r.expect(s, res.o)
	case "try":
		sess, err := a.session()
		if err != nil {
			return err
		}
		name := r.name(s.str("lock"))
		m := palisade.NewMutex(sess, name)
		err = within(10*time.Second, m.TryLock)
		if errors.Is(err, palisade.ErrLocked) {
			return r.expect(s, outcome{kind: "busy"})
		}
		if err != nil {
			return err
		}
		a.locks[name] = m
		return r.expect(s, outcome{"granted", m.Token()})
	case "release":
		if m := a.locks[r.name(s.str("lock"))]; m != nil {
			return within(10*time.Second, m.Unlock)
		}
		return nil
	case "resign":
		if e := a.leads[r.name(s.str("election"))]; e != nil {
			return within(10*time.Second, e.Resign)
		}
		return nil
	case "lost", "held":
		m := a.locks[r.name(s.str("lock"))]
		if m == nil {
			return failure("no lock " + s.str("lock"))
		}
		if op == "lost" {
			select {
			case <-m.Lost():
				return nil
			case <-time.After(time.Duration(s.num("withinMs")) * time.Millisecond):
				return failure("the lock is not lost")
			}
		}
		until := time.Now().Add(time.Duration(s.num("forMs")) * time.Millisecond)
		for {
			if !m.Held() {
				return failure("the lock was lost")
			}
			if time.Now().After(until) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "lockState":
		name := r.name(s.str("lock"))
		last := ""
		return eventually(s.num("withinMs"), func() bool {
			var info palisade.LockInfo
			err := within(5*time.Second, func(ctx context.Context) (err error) { info, err = r.reader.LockInfo(ctx, name); return })
			if err != nil {
				last = err.Error()
				return false
			}
			last = fmt.Sprintf("%d holders, %d waiters", len(info.Holders), len(info.Waiters))
			return (!s.has("holders") || len(info.Holders) == int(s.num("holders"))) && (!s.has("waiters") || len(info.Waiters) == int(s.num("waiters")))
		}, func() string { return "lock state: saw " + last })
	case "put":
		sess, err := a.session()
		if err != nil {
			return err
		}
		var opts []palisade.WriteOption
		if f, ok := s["fence"].(map[string]any); ok {
			opts = append(opts, palisade.WithFence(palisade.Fence{Lock: r.name(fmt.Sprint(f["lock"])), Token: r.vars[fmt.Sprint(f["token"])]}))
		}
		err = within(10*time.Second, func(ctx context.Context) error {
			_, err := sess.Put(ctx, r.name(s.str("key")), []byte(s.str("value")), opts...)
			return err
		})
		got := "ok"
		if errors.Is(err, palisade.ErrFenced) {
			got = "fenced"
		} else if err != nil {
			return err
		}
		return check(got == s.str("expect"), "put: expected %s, got %s", s.str("expect"), got)
	case "get":
		var kv *palisade.KeyValue
		err := within(5*time.Second, func(ctx context.Context) (err error) { kv, err = r.reader.Get(ctx, r.name(s.str("key"))); return })
		if err != nil {
			return err
		}
		return check(kv != nil && string(kv.Value) == s.str("value"), "get: %v, expected %s", kv, s.str("value"))
	case "greater":
		a, b := r.vars[s.str("a")], r.vars[s.str("b")]
		return check(a > 0 && b > 0 && a > b, "%s=%d is not greater than %s=%d", s.str("a"), a, s.str("b"), b)
	case "observe":
		election := r.name(s.str("election"))
		r.collect(s.str("task"), a, func(ctx context.Context, add func(key, value *string)) {
			for st := range a.c.Observe(ctx, election) {
				v := st.Value
				add(nil, &v)
			}
		})
		return nil
	case "watch":
		prefix := r.name(s.str("prefix"))
		r.collect(s.str("task"), a, func(ctx context.Context, add func(key, value *string)) {
			for e := range a.c.Watch(ctx, prefix, palisade.WithExistingKeys()) {
				k := e.Key
				var v *string
				if e.Type == palisade.EventPut {
					text := string(e.Value)
					v = &text
				}
				add(&k, v)
			}
		})
		return nil
	case "observed", "watched":
		return r.matched(s)
	case "killLeader":
		_, err := post("/kill-leader")
		return err
	case "restart":
		_, err := post("/restart")
		return err
	case "pause", "resume":
		_, err := post("/relay/" + op + "?relay=" + url.QueryEscape(a.relay))
		return err
	default:
		return failure("unknown op " + op)
	}
}

func (r *run) close() {
	for _, a := range r.actors {
		for _, cancel := range a.cancels {
			cancel()
		}
		if a.relay != "" {
			_, _ = post("/relay/resume?relay=" + url.QueryEscape(a.relay))
		}
		if a.s != nil {
			_ = a.s.Close()
		}
		_ = a.c.Close()
	}
}

func runAll(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var table struct {
		Scenarios []scenario `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	reader, err := palisade.New(palisade.Config{Endpoints: endpoints})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	id := fmt.Sprintf("conf/go/%08x/", rand.New(rand.NewSource(time.Now().UnixNano())).Uint32())
	failed := 0
	for _, sc := range table.Scenarios {
		r := &run{prefix: id + sc.ID + "/", actors: map[string]*actor{}, vars: map[string]uint64{}, tasks: map[string]chan result{}, seen: map[string]*seen{}, reader: reader}
		t0 := time.Now()
		n := 0
		var err error
		for _, s := range sc.Steps {
			n++
			if err = r.step(s); err != nil {
				break
			}
		}
		r.close()
		if err != nil {
			failed++
			fmt.Printf("not ok %s: step %d (%s): %v\n", sc.ID, n, sc.Steps[n-1].str("op"), err)
		} else {
			fmt.Printf("ok %s %d ms\n", sc.ID, time.Since(t0).Milliseconds())
		}
	}
	out, _ := json.Marshal(map[string]any{"runner": "go", "scenarios": len(table.Scenarios), "failed": failed})
	fmt.Println(string(out))
	if failed > 0 {
		return 1
	}
	return 0
}

// bench: N acquire + release pairs by one session, one at a time; the first tenth is warm-up.
func bench(pairs int) int {
	ctx := context.Background()
	c, err := palisade.New(palisade.Config{Endpoints: endpoints})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := palisade.NewSession(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	name := fmt.Sprintf("conf/go/bench/%d", time.Now().UnixNano())
	var ms []float64
	for i := 0; i < pairs; i++ {
		t0 := time.Now()
		m := palisade.NewMutex(s, name)
		if err := within(5*time.Second, m.Lock); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := m.Unlock(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	kept := ms[pairs/10:]
	ordered := append([]float64(nil), kept...)
	sort.Float64s(ordered)
	at := func(q float64) float64 {
		i := int(q * float64(len(ordered)))
		if i >= len(ordered) {
			i = len(ordered) - 1
		}
		v, _ := strconv.ParseFloat(fmt.Sprintf("%.2f", ordered[i]), 64)
		return v
	}
	out, _ := json.Marshal(map[string]any{"client": "go", "transport": "http", "pairs": len(kept), "p50Ms": at(0.5), "p99Ms": at(0.99), "ms": kept})
	fmt.Println(string(out))
	return 0
}

func main() {
	args := os.Args[1:]
	if len(args) >= 1 && args[0] == "--bench" {
		n := 300
		if len(args) > 1 {
			n, _ = strconv.Atoi(args[1])
		}
		os.Exit(bench(n))
	}
	path := "../../test/conformance/scenarios.json"
	if len(args) > 0 {
		path = args[0]
	}
	os.Exit(runAll(path))
}
