// Which client connections on this node want which events: the sessions they carry, the
// elections they observe and the key prefixes they watch. Each node pushes the events its
// own state machine produces to its own connections.
import type { ServerEvent } from '../../protocol/client-protocol.js';

export interface EventSink {
  readonly id: number;
  pushEvent(e: ServerEvent): void;
  /** False once the client behind it has left; absent when the sink cannot tell. */
  isOpen?(): boolean;
}

class Index<K> {
  // A key's sinks: the sink itself while there is one, a Set from the second on. A session
  // is carried by one connection, and a Set per session was about 150 bytes of what each
  // open session cost the node its client is connected to.
  private readonly byKey = new Map<K, EventSink | Set<EventSink>>();
  private readonly byConn = new Map<EventSink, Set<K>>();

  /** A key gained its first sink / lost its last one. */
  protected keyAdded(_key: K): void {}
  protected keyRemoved(_key: K): void {}

  add(key: K, conn: EventSink): void {
    const s = this.byKey.get(key);
    if (s === undefined) {
      this.byKey.set(key, conn);
      this.keyAdded(key);
    } else if (s instanceof Set) s.add(conn);
    else if (s !== conn) this.byKey.set(key, new Set([s, conn]));
    let k = this.byConn.get(conn);
    if (!k) this.byConn.set(conn, (k = new Set()));
    k.add(key);
  }

  remove(key: K, conn: EventSink): void {
    this.unlink(key, conn);
    this.byConn.get(conn)?.delete(key);
  }

  removeKey(key: K): void {
    if (!this.byKey.has(key)) return;
    for (const c of this.get(key)) this.byConn.get(c)?.delete(key);
    this.deleteKey(key);
  }

  dropConn(conn: EventSink): void {
    for (const key of this.byConn.get(conn) ?? []) this.unlink(key, conn);
    this.byConn.delete(conn);
  }

  /** `conn` no longer wants `key` (byConn is the caller's). */
  private unlink(key: K, conn: EventSink): void {
    const s = this.byKey.get(key);
    if (s instanceof Set) {
      s.delete(conn);
      if (s.size === 0) this.deleteKey(key);
    } else if (s === conn) this.deleteKey(key);
  }

  private deleteKey(key: K): void {
    this.byKey.delete(key);
    this.keyRemoved(key);
  }

  get(key: K): Iterable<EventSink> {
    const s = this.byKey.get(key);
    return s === undefined ? [] : s instanceof Set ? s : [s];
  }

  keys(): Iterable<K> {
    return this.byKey.keys();
  }

  countFor(conn: EventSink): number {
    return this.byConn.get(conn)?.size ?? 0;
  }
}

/**
 * Watched key prefixes, with the lengths they come in: the prefixes a key matches are its
 * own first n characters for each watched length n, so a change looks up one slice per
 * distinct length (at most 1 KiB + 1 of them) instead of testing every watched prefix.
 */
class PrefixIndex extends Index<string> {
  private readonly lengths = new Map<number, number>();

  protected override keyAdded(prefix: string): void {
    this.lengths.set(prefix.length, (this.lengths.get(prefix.length) ?? 0) + 1);
  }

  protected override keyRemoved(prefix: string): void {
    const n = (this.lengths.get(prefix.length) ?? 1) - 1;
    if (n > 0) this.lengths.set(prefix.length, n);
    else this.lengths.delete(prefix.length);
  }

  /** Every sink watching a prefix of `key`, each once however many of its prefixes match. */
  sinksFor(key: string): Set<EventSink> {
    const sinks = new Set<EventSink>();
    for (const n of this.lengths.keys()) {
      if (n > key.length) continue;
      for (const c of this.get(key.slice(0, n))) sinks.add(c);
    }
    return sinks;
  }
}

export class Subscriptions {
  readonly sessions = new Index<number>();
  readonly elections = new Index<string>();
  readonly watches = new PrefixIndex();

  dropConn(conn: EventSink): void {
    this.sessions.dropConn(conn);
    this.elections.dropConn(conn);
    this.watches.dropConn(conn);
  }

  route(e: ServerEvent): void {
    switch (e.event) {
      case 'granted':
      case 'released':
        for (const c of this.sessions.get(e.session)) c.pushEvent(e);
        return;
      case 'sessionExpired':
        for (const c of this.sessions.get(e.session)) c.pushEvent(e);
        this.sessions.removeKey(e.session);
        return;
      case 'electionChanged':
        for (const c of this.elections.get(e.election)) c.pushEvent(e);
        return;
      case 'kvChanged':
        // A connection watching o/ and o/a gets a change of o/a1 once, not once per prefix.
        for (const c of this.watches.sinksFor(e.key)) c.pushEvent(e);
        return;
    }
  }
}
