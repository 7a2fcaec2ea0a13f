// Forwarding: a follower sends a client's request to the leader over the authenticated
// peer link and relays the answer; the leader serves forwarded requests. A forwarded
// request is never forwarded again (no loops): a node that no longer leads answers
// UNAVAILABLE and the client retries. Depends on the node through ForwardCore only.
//
// When the node learns that another node leads, a forward still waiting on the old leader
// will not be answered by it (it is dead, paused or cut off, which is why leadership
// moved): it is answered at once, TIMEOUT (the outcome is unknown: the old leader may have
// replicated it to the new one) with the new leader as hint, so the client retries there
// with the same seq instead of waiting out the forward's timeout.
//
// When the node has no link to the leader it knows (the leader was killed: its sockets
// closed at once, but the election that replaces it takes an election timeout or two), the
// request waits here for the next leader, or for the link to come back, and goes there
// (within the same bound as a wait for an election: both together take at most leaderWaitMs). It
// is not answered UNAVAILABLE with the dead node as hint: the client would go to the dead
// node, be refused, come back, and back off further each round, and so reach the new leader
// long after it was elected.
//
// A request held that way whose client has gone (closed its connection: the SDK moved to
// the new leader, or gave up at its deadline and withdrew the request there) is dropped,
// never forwarded later: applied after the client's retry or withdrawal, it would queue or
// grant a lock nobody waits for.
import type { NodeId } from '../../raft/index.js';
import type { Request } from '../../protocol/client-protocol.js';
import { isRequestError, parseRequest } from '../../protocol/validate.js';
import { fail } from '../api/wire.js';
import type { Answer } from '../../protocol/ops.js';
import { MAX_LEASE_BATCH, type LeaseAnswer } from './lease-batch.js';
import { systemClock, type NodeClock, type Timer } from '../clock.js';

/** The leader's answer to a batch of keepalives (keepalive-batch.ts): for each session in
 *  order, its TTL once renewed, or null when the leader keeps no lease for it. */

/** Peer application frames: a follower forwards client requests, and batches of its
 *  clients' keepalives, to the leader. */
export type PeerApp =
  | { t: 'fwd'; rid: number; req: Request; owner?: string | null }
  | { t: 'fwdLeases'; rid: number; sessions: number[] }
  | { t: 'fwdRes'; rid: number; ans: Answer | LeaseAnswer }
  | { t: 'removed'; index: number }
  /** Sent on every new link: what this node serves beyond the previous release. A release
   *  before it ignores the frame (and never sends one), so its peers keep to what it serves. */
  | { t: 'serves'; leaseBatches: boolean };

/** What a forward carries to the leader, and how this node serves it if it leads itself. */
interface Carried<A> {
  frame(rid: number): PeerApp;
  here(): Promise<A>;
}

/** The node as forwarding sees it. */
export interface ForwardCore {
  readonly id: NodeId;
  leader(): NodeId | null;
  isLeader(): boolean;
  /** False when there is no connection to `to`. */
  sendApp(to: NodeId, frame: PeerApp): boolean;
  /** Serve a request on this node (it leads). `owner`: the token that sent it. */
  handle<R extends Request>(req: R, owner: string | null): Promise<Answer<R['op']>>;
  /** Renew these sessions' leases on this node (it leads): a follower's keepalive batch. */
  renewLeases(sessions: readonly number[]): Promise<LeaseAnswer>;
  unavailable(message: string): Answer<never>;
  /** A peer says this node was removed by the entry at `index`. */
  removedBy(index: number): void;
}

/** How often a request waiting for a link to the leader tries the link again, when no
 *  link-up (linkUp) wakes it first. */
const LINK_RETRY_MS = 50;

interface LeaderWaiter {
  /** The leader the waiter cannot use (null: none known); a leader other than this wakes it. */
  readonly not: NodeId | null;
  done: () => void;
}

export class Forwarder {
  private readonly pending = new Map<number, { leader: NodeId; resolve: (a: Answer | LeaseAnswer) => void; timer: Timer }>();
  // A Set, not an array: thousands of held requests each time out on their own, and each
  // removal must not cost a pass over all the others (20,000 held requests blocked a
  // follower's event loop for seconds with an array's filter per timeout).
  private readonly leaderWaiters = new Set<LeaderWaiter>();
  private counter = 0;
  /** Peers that said, on their current link, that they serve keepalive batches. */
  private readonly batchingPeers = new Set<NodeId>();

  constructor(
    private readonly core: ForwardCore,
    /** How long a forwarded request may wait for the leader's answer. */
    private readonly requestTimeoutMs: number,
    /** How long to wait for an election when no leader is known. */
    private readonly leaderWaitMs: number,
    private readonly linkRetryMs: number = LINK_RETRY_MS,
    private readonly clock: NodeClock = systemClock,
  ) {}

  /** Send a request to the leader over the peer link and wait for its answer. `gone`: its
   *  client has left (a request held for a leader is then dropped, not forwarded). */
  forward<R extends Request>(req: R, owner: string | null = null, gone: () => boolean = () => false): Promise<Answer<R['op']>> {
    // The leader answers with its own handle() of this very request (forwarded requests
    // are never forwarded again), so the answer is one to req.op.
    return this.carry<Answer<R['op']>>({ frame: (rid) => ({ t: 'fwd', rid, req, owner }), here: () => this.core.handle(req, owner) }, gone);
  }

  /** Send a batch of keepalives to the leader (keepalive-batch.ts) and wait for its answer. */
  renewLeases(sessions: readonly number[], gone: () => boolean = () => false): Promise<LeaseAnswer> {
    // Elected here while the batch filled (it waits up to a tick): renew them here. (carry
    // would take a leader that is this node for one handing over, and wait for the next.)
    if (this.core.isLeader()) return this.core.renewLeases(sessions);
    return this.carry<LeaseAnswer>({ frame: (rid) => ({ t: 'fwdLeases', rid, sessions: [...sessions] }), here: () => this.core.renewLeases(sessions) }, gone);
  }

  private async carry<A extends Answer | LeaseAnswer>(c: Carried<A>, gone: () => boolean): Promise<A | Answer<never>> {
    const { core } = this;
    // One bound for the whole hold: waiting for an election, then for a link to its winner.
    const giveUpAt = this.clock.now() + this.leaderWaitMs;
    let leader = core.leader();
    if (leader === core.id) {
      // This node still leads but its own core refused the request (a removed leader
      // handing over): serving it here again would be refused again, forever (a loop of
      // promises that starves the event loop). Wait for another leader instead.
      await this.waitForLeader(this.leaderWaitMs, core.id);
      if (gone()) return clientGone();
      leader = core.leader();
      if (leader === null || leader === core.id) return core.unavailable('this node is handing leadership over; retry');
    } else if (leader === null) {
      await this.waitForLeader(this.leaderWaitMs);
      if (gone()) return clientGone();
      leader = core.leader();
      // Elected here while waiting: serve it here.
      if (leader === core.id) return c.here();
      if (leader === null) return core.unavailable('no leader elected yet; retry');
    }
    for (;;) {
      const sent = this.send(leader, c);
      if (sent) return sent;
      const remaining = giveUpAt - this.clock.now();
      // No hint: the leader this node knows is the one it cannot reach.
      if (remaining <= 0) return fail('UNAVAILABLE', `no connection to leader ${leader}; retry`);
      await this.waitForLeader(Math.min(remaining, this.linkRetryMs), leader);
      if (gone()) return clientGone();
      const next = core.leader();
      if (next === core.id) return c.here();
      if (next !== null) leader = next;
    }
  }

  /** Sends `c` to `to` and resolves with its answer; null when there is no link to `to`. */
  private send<A extends Answer | LeaseAnswer>(to: NodeId, c: Carried<A>): Promise<A | Answer<never>> | null {
    const rid = ++this.counter;
    const timer = this.clock.setTimeout(() => {
      const f = this.pending.get(rid);
      this.pending.delete(rid);
      f?.resolve(fail('TIMEOUT', `leader ${to} did not answer within ${this.requestTimeoutMs} ms; the outcome is unknown, retry with the same seq`));
    }, this.requestTimeoutMs);
    let resolve!: (a: Answer | LeaseAnswer) => void;
    const answer = new Promise<Answer | LeaseAnswer>((r) => (resolve = r));
    this.pending.set(rid, { leader: to, resolve, timer });
    if (!this.core.sendApp(to, c.frame(rid))) {
      this.clock.clear(timer);
      this.pending.delete(rid);
      return null;
    }
    // The leader answers a frame with what serving its content gives (Carried's A): a
    // request's answer (handle) or a batch's (renewLeases).
    return answer as Promise<A | Answer<never>>;
  }

  /** A leader is known again: requests waiting for one go on; forwards to another node are answered. */
  leaderKnown(): void {
    const leader = this.core.leader();
    if (leader !== null) for (const w of this.leaderWaiters) if (w.not !== leader) w.done();
    for (const [rid, f] of this.pending) {
      if (leader === null || f.leader === leader) continue;
      this.pending.delete(rid);
      this.clock.clear(f.timer);
      f.resolve(this.leaderMoved(f.leader));
    }
  }

  /** The link to `peer` is up: requests held for want of it go now, not at their next
   *  retry; and the peer learns what this node serves. */
  linkUp(peer: NodeId): void {
    this.core.sendApp(peer, { t: 'serves', leaseBatches: true });
    for (const w of this.leaderWaiters) if (w.not === peer) w.done();
  }

  /** The link to `peer` is down: what it serves is asked again on the next (it may restart
   *  on another release). */
  linkDown(peer: NodeId): void {
    this.batchingPeers.delete(peer);
  }

  /** Whether keepalives for `leader` may go in batches (renewLeases): a leader of an older
   *  release does not serve them (the rolling-upgrade rule of docs/operations.md: nothing
   *  new is sent to a node before it says it reads it). Unknown leader: batch, see
   *  docs/internals.md "Keepalives through a follower". */
  batchesFor(leader: NodeId | null): boolean {
    return leader === null || leader === this.core.id || this.batchingPeers.has(leader);
  }

  /** TIMEOUT (outcome unknown), with the hint the node gives for the new leader. */
  private leaderMoved(old: NodeId): Answer<never> {
    const message = `leader ${old} was replaced while the request was forwarded to it; the outcome is unknown, retry with the same seq at the new leader`;
    const hinted = this.core.unavailable(message);
    return hinted.ok ? fail('TIMEOUT', message) : { ok: false, error: { ...hinted.error, code: 'TIMEOUT', message } };
  }

  onPeerApp(from: NodeId, p: PeerApp): void {
    if (!p || typeof p !== 'object') return;
    const { core } = this;
    if (p.t === 'fwd') {
      // Forwarded requests come from a peer that thinks we lead. If we don't, answer
      // UNAVAILABLE rather than forwarding again (no forwarding loops).
      const run = async (): Promise<Answer> => {
        if (!core.isLeader()) return core.unavailable('forwarded to a node that is not the leader; retry');
        // The peer is authenticated, but it may run another version: validate again.
        const req = parseRequest(p.req);
        if (isRequestError(req)) return { ok: false, error: req.error };
        return core.handle(req, typeof p.owner === 'string' ? p.owner : null);
      };
      void run().then((ans) => core.sendApp(from, { t: 'fwdRes', rid: p.rid, ans }));
    } else if (p.t === 'fwdLeases') {
      const run = async (): Promise<LeaseAnswer> => {
        if (!core.isLeader()) return core.unavailable('keepalives forwarded to a node that is not the leader; retry');
        // The peer is authenticated, but it may run another version: check the batch.
        const sessions = leaseBatch(p.sessions);
        if (sessions === null) return fail('BAD_FRAME', `a keepalive batch is a list of at most ${MAX_LEASE_BATCH} session ids`);
        return core.renewLeases(sessions);
      };
      void run().then((ans) => core.sendApp(from, { t: 'fwdRes', rid: p.rid, ans }));
    } else if (p.t === 'serves') {
      if (p.leaseBatches === true) this.batchingPeers.add(from);
      else this.batchingPeers.delete(from);
    } else if (p.t === 'removed') {
      if (typeof p.index === 'number') core.removedBy(p.index);
    } else if (p.t === 'fwdRes') {
      const f = this.pending.get(p.rid);
      if (!f) return;
      this.pending.delete(p.rid);
      this.clock.clear(f.timer);
      f.resolve(p.ans);
    }
  }

  /** Resolves once a leader other than `not` is known, or after `ms`. */
  private waitForLeader(ms: number, not: NodeId | null = null): Promise<void> {
    const leader = this.core.leader();
    if (leader !== null && leader !== not) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: LeaderWaiter = { not, done: () => {} };
      const t = this.clock.setTimeout(() => waiter.done(), ms);
      waiter.done = () => {
        this.clock.clear(t);
        this.leaderWaiters.delete(waiter);
        resolve();
      };
      this.leaderWaiters.add(waiter);
    });
  }
}

/** The session ids of a peer's keepalive batch, or null when it is not one. */
function leaseBatch(x: unknown): number[] | null {
  if (!Array.isArray(x) || x.length > MAX_LEASE_BATCH) return null;
  return x.every((s) => Number.isSafeInteger(s) && s > 0) ? (x as number[]) : null;
}

/** The answer to a held request whose client has left: nobody reads it. */
function clientGone(): Answer<never> {
  return fail('UNAVAILABLE', 'the client left while the request waited for a leader; it was not forwarded');
}
