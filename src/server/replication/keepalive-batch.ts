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

interface Waiting {
  readonly session: number;
  readonly gone: () => boolean;
  readonly resolve: (a: Answer<'keepAlive'>) => void;
}

export class KeepAliveBatcher {
  private waiting: Waiting[] = [];
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

  /** The leader's answer to this keepalive, relayed. `gone`: its client has left. */
  renew(session: number, gone: () => boolean): Promise<Answer<'keepAlive'>> {
    return new Promise((resolve) => {
      this.waiting.push({ session, gone, resolve });
      if (this.waiting.length >= MAX_LEASE_BATCH) this.flush();
      else this.timer ??= this.clock.setTimeout(() => this.flush(), this.windowMs);
    });
  }

  /** The node stops: keepalives not yet sent are answered UNAVAILABLE. */
  stop(): void {
    this.clock.clear(this.timer);
    this.timer = null;
    const batch = this.waiting;
    this.waiting = [];
    for (const w of batch) w.resolve(fail('UNAVAILABLE', 'node is shutting down'));
  }

  private flush(): void {
    this.clock.clear(this.timer);
    this.timer = null;
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    this.batches++;
    this.batched += batch.length;
    const sessions = batch.map((w) => w.session);
    this.send(sessions, () => batch.every((w) => w.gone())).then(
      (ans) => batch.forEach((w, i) => w.resolve(answerOne(ans, i, w.session))),
      (e: unknown) => batch.forEach((w) => w.resolve(fail('INTERNAL', (e as Error).message))),
    );
  }
}

/** One keepalive's answer out of the leader's answer to its batch. */
function answerOne(ans: LeaseAnswer, i: number, session: number): Answer<'keepAlive'> {
  if (!ans.ok) return ans;
  // The answer came over a peer link: a member of another version (or a buggy one) must not
  // be able to end this process with a misshapen one.
  const ttls: unknown = (ans.result as { ttls?: unknown } | undefined)?.ttls;
  if (!Array.isArray(ttls)) return fail('INTERNAL', 'the leader answered a keepalive batch with something else');
  const ttlMs: unknown = ttls[i];
  if (ttlMs !== null && ttlMs !== undefined && typeof ttlMs !== 'number') return fail('INTERNAL', 'the leader answered a keepalive with something else');
  if (ttlMs === undefined) return fail('INTERNAL', `the leader answered ${ttls.length} keepalives of a batch longer than that`);
  return ttlMs === null ? unknownSession(session) : answer('keepAlive', { ttlMs });
}
