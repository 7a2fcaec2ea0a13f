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
  private readonly byKey = new Map<K, Set<EventSink>>();
  private readonly byConn = new Map<EventSink, Set<K>>();

  add(key: K, conn: EventSink): void {
    let s = this.byKey.get(key);
    if (!s) this.byKey.set(key, (s = new Set()));
    s.add(conn);
    let k = this.byConn.get(conn);
    if (!k) this.byConn.set(conn, (k = new Set()));
    k.add(key);
  }

  remove(key: K, conn: EventSink): void {
    this.byKey.get(key)?.delete(conn);
    if (this.byKey.get(key)?.size === 0) this.byKey.delete(key);
    this.byConn.get(conn)?.delete(key);
  }

  removeKey(key: K): void {
    for (const c of this.byKey.get(key) ?? []) this.byConn.get(c)?.delete(key);
    this.byKey.delete(key);
  }

  dropConn(conn: EventSink): void {
    for (const key of this.byConn.get(conn) ?? []) {
      this.byKey.get(key)?.delete(conn);
      if (this.byKey.get(key)?.size === 0) this.byKey.delete(key);
    }
    this.byConn.delete(conn);
  }

  get(key: K): Iterable<EventSink> {
    return this.byKey.get(key) ?? [];
  }

  keys(): Iterable<K> {
    return this.byKey.keys();
  }

  countFor(conn: EventSink): number {
    return this.byConn.get(conn)?.size ?? 0;
  }
}

export class Subscriptions {
  readonly sessions = new Index<number>();
  readonly elections = new Index<string>();
  readonly watches = new Index<string>();

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
        for (const prefix of this.watches.keys()) {
          if (e.key.startsWith(prefix)) for (const c of this.watches.get(prefix)) c.pushEvent(e);
        }
        return;
    }
  }
}
