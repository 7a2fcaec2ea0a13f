package palisade

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"
)

// KeyValue is a key's value and revision (the index of the entry that last wrote it).
type KeyValue struct {
	Key      string
	Value    []byte
	Revision int64
}

// Get reads a key (linearizable); nil when it does not exist.
func (c *Client) Get(ctx context.Context, key string) (*KeyValue, error) {
	var raw json.RawMessage
	if err := c.read(ctx, "/v1/kv", url.Values{"key": {key}}, &raw); err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, nil
	}
	var e wireEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, malformed("kv entry: %v", err)
	}
	v, err := e.bytes()
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, malformed("entry %q has no value", e.Key)
	}
	return &KeyValue{Key: e.Key, Value: v, Revision: e.Revision}, nil
}

// WriteOption configures Put and Delete.
type WriteOption func(*writeOptions)

type writeOptions struct {
	fence      Fencer
	ifRevision *int64
}

// WithFence applies the write only while f's lock is held right then with f's token;
// otherwise ErrFenced (and a Mutex or Election given as f is marked lost).
func WithFence(f Fencer) WriteOption { return func(o *writeOptions) { o.fence = f } }

// WithIfRevision applies the write only if the key's revision is rev (0: the key must not
// exist); otherwise ErrConflict with CurrentRevision.
func WithIfRevision(rev int64) WriteOption { return func(o *writeOptions) { o.ifRevision = &rev } }

func (s *Session) kvWrite(ctx context.Context, path string, fields map[string]any, opts []WriteOption, out any) error {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	if o.fence != nil {
		f := o.fence.Fence()
		fields["fence"] = map[string]any{"lock": f.Lock, "token": uintString(f.Token)}
	}
	if o.ifRevision != nil {
		fields["ifRevision"] = *o.ifRevision
	}
	err := s.sequenced(ctx, path, fields, out)
	if err != nil && o.fence != nil && errors.Is(err, ErrFenced) {
		if h, ok := o.fence.(interface{ fencedOut() }); ok {
			h.fencedOut()
		}
	}
	return err
}

// Put writes key (through the session: exactly once, by seq); returns its new revision. A
// Put whose outcome is unknown fails with an indefinite error (retrying is safe).
func (s *Session) Put(ctx context.Context, key string, value []byte, opts ...WriteOption) (int64, error) {
	fields := map[string]any{"key": key}
	requestValue(value, fields)
	var r struct {
		Revision int64 `json:"revision"`
	}
	err := s.kvWrite(ctx, "/v1/kv/put", fields, opts, &r)
	return r.Revision, err
}

// Delete deletes key; true when it existed.
func (s *Session) Delete(ctx context.Context, key string, opts ...WriteOption) (bool, error) {
	var r struct {
		Existed bool `json:"existed"`
	}
	err := s.kvWrite(ctx, "/v1/kv/delete", map[string]any{"key": key}, opts, &r)
	return r.Existed, err
}

// EventType of a watch event.
type EventType int

const (
	// EventPut: the key was written (Value holds its bytes).
	EventPut EventType = iota
	// EventDelete: the key was deleted (Value is nil). Revision 0: a deletion inferred from
	// a fresh snapshot after the stream broke (the deleting entry itself was not seen).
	EventDelete
)

// WatchEvent is one change under a watched prefix.
type WatchEvent struct {
	Type     EventType
	Key      string
	Value    []byte
	Revision int64
}

// WatchOption configures Watch.
type WatchOption func(*watchOptions)

type watchOptions struct{ existing bool }

// WithExistingKeys makes a watch send the keys that exist when it starts, as EventPut.
func WithExistingKeys() WatchOption { return func(o *watchOptions) { o.existing = true } }

// watchPage: entries a node sends in a watch's snapshot at most; a full page proves no deletion.
const watchPage = 1000

// Watch streams every change to keys under prefix until ctx ends (then the channel is
// closed), from a node's event stream (GET /v1/kv/watch). The stream stays up through
// leader changes; when its node goes away it is reopened on another, and the new snapshot
// fills in what was missed.
func (c *Client) Watch(ctx context.Context, prefix string, opts ...WatchOption) <-chan WatchEvent {
	var o watchOptions
	for _, f := range opts {
		f(&o)
	}
	out := make(chan WatchEvent)
	go func() {
		defer close(out)
		known := map[string]int64{}
		baselined := false
		send := func(e WatchEvent) bool {
			if seen, ok := known[e.Key]; ok && e.Revision != 0 && e.Revision <= seen {
				return true
			}
			known[e.Key] = e.Revision
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		c.reopening(ctx, "/v1/kv/watch", url.Values{"prefix": {prefix}}, func(ev sseEvent) bool {
			switch ev.name {
			case "snapshot":
				var snap struct {
					Entries []wireEntry `json:"entries"`
				}
				if json.Unmarshal(ev.data, &snap) != nil {
					return false
				}
				first := !baselined
				baselined = true
				present := map[string]bool{}
				for _, e := range snap.Entries {
					present[e.Key] = true
					v, err := e.bytes()
					if err != nil {
						return false
					}
					if first && !o.existing {
						if known[e.Key] < e.Revision {
							known[e.Key] = e.Revision
						}
						continue
					}
					if !send(WatchEvent{Type: EventPut, Key: e.Key, Value: v, Revision: e.Revision}) {
						return false
					}
				}
				if !first && len(snap.Entries) < watchPage {
					for key, rev := range known {
						if rev > 0 && !present[key] {
							known[key] = 0
							select {
							case out <- WatchEvent{Type: EventDelete, Key: key}:
							case <-ctx.Done():
								return false
							}
						}
					}
				}
			case "kvChanged":
				var e wireEntry
				if json.Unmarshal(ev.data, &e) != nil {
					return false
				}
				v, err := e.bytes()
				if err != nil {
					return false
				}
				t := EventPut
				if v == nil {
					t = EventDelete
				}
				return send(WatchEvent{Type: t, Key: e.Key, Value: v, Revision: e.Revision})
			}
			return true
		})
	}()
	return out
}

// reopening reads a stream's events, reopened (on the next node, with backoff) when it
// breaks, until ctx ends or each returns false.
func (c *Client) reopening(ctx context.Context, path string, query url.Values, each func(sseEvent) bool) {
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		body, err := c.t.openStream(ctx, path, query)
		if err == nil {
			stopped := false
			_ = readEvents(body, func(ev sseEvent) bool {
				pause = 50 * time.Millisecond
				if !each(ev) {
					stopped = true
					return false
				}
				return true
			})
			body.Close()
			if stopped {
				return
			}
		} else if e, ok := err.(*Error); ok && e.Code != "UNAVAILABLE" && e.Code != "TIMEOUT" && e.Code != "WRONG_CLUSTER" {
			c.cfg.logf("palisade: %s: %v", path, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if pause *= 2; pause > time.Second {
			pause = time.Second
		}
	}
}
