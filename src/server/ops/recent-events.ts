// The last few hundred things that happened, as this node saw them: lock grants and
// releases, session expiries, lock-delays, election changes (all from applied entries, so
// every node sees the same ones) and Raft leader and role changes (this node's own view).
// The status page shows them; nothing else depends on them, so they are not persisted and
// a restarted node starts with an empty list.
import type { MachineEvent } from '../../lockfsm/index.js';

export type RecentEventKind =
  | 'settingsChanged'
  | 'granted'
  | 'queued'
  | 'released'
  | 'sessionOpened'
  | 'sessionClosed'
  | 'sessionExpired'
  | 'lockDelayStarted'
  | 'lockDelayEnded'
  | 'electionChanged'
  | 'leaderChanged'
  | 'roleChanged';

export interface RecentEvent {
  /** Increases by one per event on this node; the page uses it to skip ones it has. */
  readonly seq: number;
  /** This node's wall clock, ms since the epoch, when it applied or saw the event. */
  readonly at: number;
  readonly kind: RecentEventKind;
  /** Log index of the entry that produced it (null for Raft role and leader changes). */
  readonly index: number | null;
  /** The lock or election it is about, if any. */
  readonly name: string | null;
  readonly session: number | null;
  readonly token: number | null;
  /** One line for people. */
  readonly text: string;
  /** Applied while the node replayed its own log at start-up: `at` is the replay's time,
   *  not when it first happened (the page marks it). */
  readonly replayed: boolean;
}

export const DEFAULT_RECENT_EVENTS = 500;

export class RecentEvents {
  private readonly ring: RecentEvent[] = [];
  private nextSeq = 1;
  private replaying = false;

  constructor(private readonly capacity = DEFAULT_RECENT_EVENTS) {}

  /** Record a machine event; null for the kinds not worth showing (kv writes). `replayed`:
   *  the entry was in this node's log when it started (it is being re-applied). */
  fromMachine(ev: MachineEvent, index: number, at: number, replayed = false): RecentEvent | null {
    this.replaying = replayed;
    try {
      return this.describe(ev, index, at);
    } finally {
      this.replaying = false;
    }
  }

  private describe(ev: MachineEvent, index: number, at: number): RecentEvent | null {
    switch (ev.type) {
      case 'granted':
        return this.add(at, 'granted', index, ev.name, ev.session, ev.token, `${ev.name} granted to session ${ev.session} (${ev.mode}, token ${ev.token})`);
      case 'queued':
        return this.add(at, 'queued', index, ev.name, ev.session, null, `session ${ev.session} queued for ${ev.name} at position ${ev.position}`);
      case 'released':
        return this.add(at, 'released', index, ev.name, ev.session, ev.token, `${ev.name} released by session ${ev.session} (token ${ev.token}, ${ev.reason})`);
      case 'sessionOpened':
        return this.add(at, 'sessionOpened', index, null, ev.session, null, `session ${ev.session} opened (ttl ${ev.ttlMs} ms)`);
      case 'sessionClosed':
        return this.add(at, 'sessionClosed', index, null, ev.session, null, `session ${ev.session} closed`);
      case 'sessionExpired': {
        const revoked = `session ${ev.session} revoked by an operator${ev.by !== undefined ? ` (${ev.by})` : ''}${ev.detail !== undefined ? `: ${ev.detail}` : ''}`;
        return this.add(at, 'sessionExpired', index, null, ev.session, null, ev.reason === 'revoke' ? revoked : `session ${ev.session} expired: its lease ran out`);
      }
      case 'lockDelayStarted':
        return this.add(at, 'lockDelayStarted', index, ev.name, null, null, `${ev.name} held back by lock-delay for ${ev.delayMs} ms`);
      case 'lockDelayEnded':
        return this.add(at, 'lockDelayEnded', index, ev.name, null, null, `${ev.name} lock-delay ended`);
      case 'electionChanged':
        return this.add(
          at,
          'electionChanged',
          index,
          ev.election,
          ev.leader,
          ev.token,
          ev.leader === null ? `election ${ev.election} has no leader` : `election ${ev.election} led by session ${ev.leader} (token ${ev.token})`,
        );
      case 'kvChanged':
        return null;
      case 'settingsChanged':
        return this.add(at, 'settingsChanged', index, null, null, null, `cluster settings changed: ${ev.changed.join(', ')}`);
    }
  }

  leaderChanged(at: number, from: string | null, to: string | null, term: number): RecentEvent {
    const text = to === null ? `leader ${from ?? '-'} lost (term ${term})` : `leader is now ${to} (term ${term}${from ? `, was ${from}` : ''})`;
    return this.add(at, 'leaderChanged', null, to, null, null, text);
  }

  roleChanged(at: number, node: string, role: string, term: number): RecentEvent {
    return this.add(at, 'roleChanged', null, node, null, null, `${node} became ${role} (term ${term})`);
  }

  /** Newest last; at most `limit`. */
  list(limit = this.capacity): RecentEvent[] {
    return this.ring.slice(Math.max(0, this.ring.length - Math.min(limit, this.capacity)));
  }

  private add(
    at: number,
    kind: RecentEventKind,
    index: number | null,
    name: string | null,
    session: number | null,
    token: number | null,
    text: string,
  ): RecentEvent {
    const e: RecentEvent = { seq: this.nextSeq++, at, kind, index, name, session, token, text, replayed: this.replaying };
    this.ring.push(e);
    // Drop in chunks: one splice per `capacity/4` events instead of a shift per event.
    if (this.ring.length > this.capacity + (this.capacity >> 2)) this.ring.splice(0, this.ring.length - this.capacity);
    return e;
  }
}
