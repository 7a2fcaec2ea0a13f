// A follower's keepalives go to the leader in batches: every keepalive that reaches this
// node within one tick travels in one peer frame, and the leader renews them all after one
// heartbeat round (ZooKeeper's learners report their sessions' touches to the leader the
// same way; Chubby's keepalive proxies do it per cell). Forwarded one by one, each keepalive
// cost the leader a peer frame to decode, a request to serve and an answer to encode: at
// 100,000 sessions spread over three nodes, two thirds of the leader's per-keepalive work.
//
// The lease guarantee is the single keepalive's (docs/internals.md, "Keepalives through a
// follower"): the leader stamps every session of a batch with the time the batch reached
// it, which is after each client sent its keepalive, and answers only after a heartbeat
// round that started after that confirms it still leads. This node only relays the
// leader's answer; it never acknowledges a keepalive on its own.
import { answer, type Answer } from '../../protocol/ops.js';
import { MAX_LEASE_BATCH, type LeaseAnswer } from './lease-batch.js';
import { fail, unknownSession } from '../api/wire.js';
import { systemClock, type NodeClock, type Timer } from '../clock.js';

/** Sends one batch to the leader (Forwarder.renewLeases): the answer covers `sessions` in
 *  order. `gone`: every client in the batch has left. */
export type SendLeaseBatch = (sessions: readonly number[], gone: () => boolean) => Promise<LeaseAnswer>;

/** One client frame's sessions (a keepAlive's one, a keepAlives' many), waiting for the
 *  batch they go in. */
interface Waiting {
  readonly sessions: readonly number[];
  readonly gone: () => boolean;
  /** The leader's answer for these sessions (its ttls, in their order), or its refusal. */
  readonly resolve: (a: LeaseAnswer) => void;
}

export class KeepAliveBatcher {
  private waiting: Waiting[] = [];
  /** Sessions in `waiting`. */
  private count = 0;
  private timer: Timer | null = null;
  /** Batches sent and keepalives they carried (status: transport counters). */
  batches = 0;
  batched = 0;

  constructor(
    private readonly send: SendLeaseBatch,
    /** How long the first keepalive of a batch waits for others; the node passes its tick. */
    private readonly windowMs: number,
    private readonly clock: NodeClock = systemClock,
  ) {}

  /** The leader's answer for `sessions` (one client's keepAlive or keepAlives frame),
   *  relayed: they go in the window's batch with everyone else's. `gone`: the client has left. */
  renewMany(sessions: readonly number[], gone: () => boolean): Promise<LeaseAnswer> {
    if (sessions.length === 0) return Promise.resolve({ ok: true, result: { ttls: [] } });
    return new Promise((resolve) => {
      // A batch never exceeds what the leader takes: one that this frame would overfill
      // leaves first (a frame is far shorter than MAX_LEASE_BATCH).
      if (this.count + sessions.length > MAX_LEASE_BATCH) this.flush();
      this.waiting.push({ sessions, gone, resolve });
      this.count += sessions.length;
      if (this.count >= MAX_LEASE_BATCH) this.flush();
      else this.timer ??= this.clock.setTimeout(() => this.flush(), this.windowMs);
    });
  }

  /** The node stops: keepalives not yet sent are answered UNAVAILABLE. */
  stop(): void {
    this.clock.clear(this.timer);
    this.timer = null;
    const batch = this.waiting;
    this.waiting = [];
    this.count = 0;
    for (const w of batch) w.resolve(fail('UNAVAILABLE', 'node is shutting down'));
  }

  private flush(): void {
    this.clock.clear(this.timer);
    this.timer = null;
    const batch = this.waiting;
    const count = this.count;
    this.waiting = [];
    this.count = 0;
    if (batch.length === 0) return;
    this.batches++;
    this.batched += count;
    const sessions = batch.flatMap((w) => w.sessions);
    this.send(sessions, () => batch.every((w) => w.gone())).then(
      (ans) => {
        const ttls = ttlsOf(ans, count);
        let at = 0;
        for (const w of batch) {
          w.resolve(Array.isArray(ttls) ? { ok: true, result: { ttls: ttls.slice(at, at + w.sessions.length) } } : ttls);
          at += w.sessions.length;
        }
      },
      (e: unknown) => batch.forEach((w) => w.resolve(fail('INTERNAL', (e as Error).message))),
    );
  }
}

/** The leader's ttls for a batch of `count` sessions, or the failure every frame in it is
 *  answered. The answer came over a peer link: a member of another version (or a buggy one)
 *  must not be able to end this process, or renew a session, with a misshapen one. */
function ttlsOf(ans: LeaseAnswer, count: number): (number | null)[] | Answer<never> {
  if (!ans.ok) return ans;
  const ttls: unknown = (ans.result as { ttls?: unknown } | undefined)?.ttls;
  if (!Array.isArray(ttls)) return fail('INTERNAL', 'the leader answered a keepalive batch with something else');
  if (ttls.length < count) return fail('INTERNAL', `the leader answered ${ttls.length} keepalives of a batch longer than that`);
  const out: (number | null)[] = [];
  for (let i = 0; i < count; i++) {
    const t: unknown = ttls[i];
    if (t !== null && typeof t !== 'number') return fail('INTERNAL', 'the leader answered a keepalive with something else');
    out.push(t);
  }
  return out;
}

/** A lone keepalive's answer out of the leader's answer for it. */
export function keepAliveAnswer(ans: LeaseAnswer, session: number): Answer<'keepAlive'> {
  if (!ans.ok) return ans;
  const ttlMs = ans.result.ttls[0] ?? null;
  return ttlMs === null ? unknownSession(session) : answer('keepAlive', { ttlMs });
}
