// An independent invariant checker for the lock state machine.
//
// It does not re-implement the machine's decisions. It keeps only what the history tells:
// who holds what (from granted/released events), who queued in which order (from queued
// events, cancels and session ends), which sessions are open, what each op of the ledger
// has answered. After every entry it checks the safety properties against that history
// and checks that the machine's own reads agree with it.

import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type {
  Applied,
  Command,
  LockMachine,
  LockMode,
  MachineEvent,
} from '../../src/lockfsm/index.js';

interface Held {
  readonly token: number;
  readonly mode: LockMode;
  /** The semaphore limit the holder asked for (null = none). */
  readonly limit: number | null;
  /** The lock-delay the holder asked for (or the config default). */
  readonly delayMs: number;
}

interface Queued {
  readonly session: number;
  readonly mode: LockMode;
  readonly limit: number | null;
  readonly delayMs: number;
}

export interface Universe {
  readonly locks: readonly string[];
  readonly elections: readonly string[];
  readonly keys: readonly string[];
  readonly opKeys: readonly string[];
}

export class InvariantChecker {
  private readonly holders = new Map<string, Map<number, Held>>();
  private readonly queues = new Map<string, Queued[]>();
  private readonly lastGrant = new Map<string, number>();
  private readonly open = new Set<number>();
  private readonly electionLeader = new Map<string, { session: number; token: number }>();
  private readonly lastEpoch = new Map<string, number>();
  private readonly kvRevision = new Map<string, number>();
  /** Keys tied to a session (ephemeral puts), per the history of commands and events. */
  private readonly ephemeralOf = new Map<string, number>();
  /** Every change of the key-value space, as the events told them: what the history must keep. */
  private readonly changes: { key: string; value: Uint8Array | null; revision: number }[] = [];
  private compactedThrough = 0;
  /** Per opKey: did a `run` come, and the recorded result once completed. */
  private readonly ops = new Map<string, { done: Uint8Array | null }>();

  /** Locks in lock-delay, per lockDelayStarted/lockDelayEnded events. */
  private readonly delayed = new Set<string>();

  constructor(
    private readonly u: Universe,
    /** The cluster's default lock-delay: follows the configure entries of the history. */
    private defaultLockDelayMs: number,
  ) {}

  private askedDelay(cmd: Command): number {
    return cmd.type === 'acquire' ? (cmd.lockDelayMs ?? this.defaultLockDelayMs) : 0;
  }

  /** The token with which `session` holds `lock` per the history, before the next entry. */
  heldToken(lock: string, session: number): number | undefined {
    return this.holders.get(lock)?.get(session)?.token;
  }

  /**
   * Checks one applied entry. `fresh` is false when a retry got its stored answer back
   * (then nothing may change and the ledger's answers are not new answers).
   */
  check(m: LockMachine, index: number, cmd: Command, applied: Applied, fresh: boolean): void {
    const where = `at index ${index} (${cmd.type})`;
    assert.equal(m.appliedIndex, index, `appliedIndex ${where}`);
    const { result, events } = applied;
    if (!fresh) assert.deepEqual(events, [], `a replayed answer emits nothing ${where}`);
    if (result.type === 'settings') this.defaultLockDelayMs = result.settings.defaultLockDelayMs;

    // Fence: anything that changes state under a fence needs the fence to hold beforehand.
    if ('fence' in cmd && cmd.fence !== undefined) {
      const pre = this.heldToken(cmd.fence.lock, cmd.session);
      if (result.type === 'error' && result.code === 'FENCED') {
        assert.notEqual(pre, cmd.fence.token, `FENCED although the fence held ${where}`);
        assert.deepEqual(events, [], `a fenced command changed something ${where}`);
      } else if (fresh && (result.type !== 'error' || events.length > 0)) {
        assert.equal(pre, cmd.fence.token, `a fenced command applied without holding the fence ${where}`);
      }
    }

    this.checkTxn(cmd, applied, fresh, where);
    this.checkEphemerals(cmd, applied, fresh, where);
    this.checkGrantTokens(index, events, where);
    // The cancelled waiter leaves first; the grants it unblocked follow in the events.
    if (cmd.type === 'cancelWait' && result.type === 'ok' && fresh) this.dequeue(cmd.name, cmd.session, where);
    this.checkLockDelays(events, where);
    for (const e of events) this.onEvent(index, cmd, e, where);
    if (fresh) this.checkLedger(m, cmd, applied, where);
    this.compareWithReads(m, cmd, where);
    this.checkHistory(m, where);
  }

  /** A txn's branch follows its compares, judged on the history before it; the changes are
   *  its branch's, in order. */
  private checkTxn(cmd: Command, applied: Applied, fresh: boolean, where: string): void {
    if (cmd.type !== 'txn' || !fresh || applied.result.type !== 'txn') return;
    const r = applied.result;
    const failed = cmd.compare.flatMap((c, i) => {
      const holds =
        c.target === 'lock'
          ? this.heldToken(c.lock, cmd.session) === c.token
          : c.target === 'absent'
            ? !this.kvRevision.has(c.key)
            : compareRevision(this.kvRevision.get(c.key) ?? 0, c.op, c.revision);
      return holds ? [] : [i];
    });
    assert.deepEqual(r.failed, failed, `txn compares ${where}`);
    assert.equal(r.succeeded, failed.length === 0, `txn branch ${where}`);
    const branch = r.succeeded ? cmd.success : cmd.failure;
    const expected = branch.flatMap((op): [string, Uint8Array | null][] =>
      op.op === 'put' ? [[op.key, op.value]] : this.kvRevision.has(op.key) ? [[op.key, null]] : [],
    );
    const seen = applied.events.flatMap((e) => (e.type === 'kvChanged' ? [[e.key, e.value]] : []));
    assert.deepEqual(seen, expected, `txn changes ${where}`);
  }

  /** An ephemeral key goes in the entry that ends its session, and no other key does. */
  private checkEphemerals(cmd: Command, applied: Applied, fresh: boolean, where: string): void {
    const ended = new Set(applied.events.flatMap((e) => (e.type === 'sessionClosed' || e.type === 'sessionExpired' ? [e.session] : [])));
    if (ended.size > 0) {
      const expected = [...this.ephemeralOf].filter(([, s]) => ended.has(s)).map(([k]) => k).sort();
      const deleted = applied.events.flatMap((e) => (e.type === 'kvChanged' && e.value === null ? [e.key] : [])).sort();
      assert.deepEqual(deleted, expected, `keys deleted when session(s) ${[...ended].join(',')} ended ${where}`);
      for (const k of expected) this.ephemeralOf.delete(k);
      return;
    }
    if (!fresh || applied.result.type === 'error') return;
    const tie = (key: string, ephemeral: boolean | undefined): void => {
      if (ephemeral === true && 'session' in cmd) this.ephemeralOf.set(key, cmd.session);
      else this.ephemeralOf.delete(key);
    };
    if (cmd.type === 'put') tie(cmd.key, cmd.ephemeral);
    if (cmd.type === 'delete') this.ephemeralOf.delete(cmd.key);
    if (cmd.type === 'txn' && applied.result.type === 'txn') {
      for (const op of applied.result.succeeded ? cmd.success : cmd.failure) tie(op.key, op.op === 'put' ? op.ephemeral : false);
    }
  }

  /** The history keeps the latest changes, exactly as they happened; what it dropped is
   *  said (compactedThrough only grows), never skipped. */
  private checkHistory(m: LockMachine, where: string): void {
    const compacted = m.historyCompactedThrough;
    assert.ok(compacted >= this.compactedThrough, `the history's compacted revision went back ${where}`);
    this.compactedThrough = compacted;
    const kept = m.kvHistory(compacted, '');
    assert.equal(kept.type, 'changes', `a resume from the compacted revision is refused ${where}`);
    if (kept.type !== 'changes') return;
    assert.deepEqual(kept.changes, this.changes.filter((c) => c.revision > compacted), `history ${where}`);
    const { historyEntries, historyBytes } = m.stats();
    assert.equal(historyEntries, kept.changes.length);
    assert.ok(historyEntries <= m.settings.watchHistoryEntries && historyBytes <= m.settings.watchHistoryBytes, `history over its bounds ${where}`);
    if (compacted > 0) assert.equal(m.kvHistory(compacted - 1, '').type, 'compacted', `a resume from before the compacted revision ${where}`);
  }

  private checkGrantTokens(index: number, events: readonly MachineEvent[], where: string): void {
    const exclusiveGrants = new Map<string, number>();
    const sharedGrants = new Map<string, number>();
    for (const e of events) {
      if (e.type !== 'granted') continue;
      assert.equal(e.token, index, `a grant's token is its entry's index ${where}`);
      const counts = e.mode === 'exclusive' ? exclusiveGrants : sharedGrants;
      counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
    }
    for (const [name, n] of exclusiveGrants) {
      assert.equal(n, 1, `one entry granted ${name} exclusively ${n} times ${where}`);
      assert.ok(!sharedGrants.has(name), `one entry granted ${name} exclusive and shared ${where}`);
    }
    for (const name of [...exclusiveGrants.keys(), ...sharedGrants.keys()]) {
      const last = this.lastGrant.get(name) ?? 0;
      assert.ok(index > last, `token of ${name} did not increase (${last} then ${index}) ${where}`);
      this.lastGrant.set(name, index);
    }
  }

  /**
   * A lock freed by expiry enters lock-delay exactly when its holder asked for a non-zero
   * delay; releases and closes never start one.
   */
  private checkLockDelays(events: readonly MachineEvent[], where: string): void {
    const expected = new Set<string>();
    for (const e of events) {
      if (e.type !== 'released') continue;
      const held = this.holders.get(e.name)?.get(e.session);
      if (e.reason === 'expire' && held !== undefined && held.delayMs > 0) expected.add(e.name);
    }
    const started = new Set(events.flatMap((e) => (e.type === 'lockDelayStarted' ? [e.name] : [])));
    assert.deepEqual([...started].sort(), [...expected].sort(), `lock-delays started ${where}`);
  }

  private onEvent(index: number, cmd: Command, e: MachineEvent, where: string): void {
    switch (e.type) {
      case 'sessionOpened':
        assert.ok(!this.open.has(e.session), `session ${e.session} opened twice ${where}`);
        this.open.add(e.session);
        return;
      case 'sessionClosed':
      case 'sessionExpired':
        assert.ok(this.open.delete(e.session), `unknown session ${e.session} ended ${where}`);
        for (const [name, q] of this.queues) this.queues.set(name, q.filter((w) => w.session !== e.session));
        return;
      case 'queued': {
        const q = this.queues.get(e.name) ?? [];
        assert.ok(!q.some((w) => w.session === e.session), `session ${e.session} queued twice for ${e.name} ${where}`);
        assert.ok(!this.holders.get(e.name)?.has(e.session), `holder ${e.session} queued for ${e.name} ${where}`);
        const limit = cmd.type === 'acquire' ? (cmd.limit ?? null) : null;
        const mode = cmd.type === 'acquire' ? cmd.mode : 'exclusive';
        q.push({ session: e.session, mode, limit, delayMs: this.askedDelay(cmd) });
        this.queues.set(e.name, q);
        assert.equal(e.position, q.length, `queue position ${where}`);
        return;
      }
      case 'granted': {
        const q = this.queues.get(e.name) ?? [];
        const at = q.findIndex((w) => w.session === e.session);
        assert.ok(!this.delayed.has(e.name), `granted ${e.name} during its lock-delay ${where}`);
        let limit: number | null;
        let delayMs: number;
        if (at >= 0) {
          assert.equal(at, 0, `FIFO: session ${e.session} overtook ${q[0]?.session} on ${e.name} ${where}`);
          assert.equal(q[0]!.mode, e.mode, `granted in another mode than asked ${where}`);
          ({ limit, delayMs } = q.shift()!);
        } else {
          assert.equal(q.length, 0, `FIFO: ${e.session} granted ${e.name} at once while others wait ${where}`);
          assert.ok(cmd.type === 'acquire' && cmd.session === e.session && cmd.name === e.name, `grant from nowhere ${where}`);
          limit = cmd.type === 'acquire' ? (cmd.limit ?? null) : null;
          delayMs = this.askedDelay(cmd);
        }
        assert.ok(this.open.has(e.session), `granted to a closed session ${where}`);
        const h = this.holders.get(e.name) ?? new Map<number, Held>();
        assert.ok(!h.has(e.session), `granted twice to ${e.session} ${where}`);
        h.set(e.session, { token: e.token, mode: e.mode, limit, delayMs });
        this.holders.set(e.name, h);
        this.checkLockInvariants(e.name, where);
        return;
      }
      case 'released': {
        const h = this.holders.get(e.name);
        const held = h?.get(e.session);
        assert.ok(held, `released what ${e.session} did not hold ${where}`);
        assert.equal(held.token, e.token, `released with another token ${where}`);
        h!.delete(e.session);
        return;
      }
      case 'electionChanged': {
        const prev = this.electionLeader.get(e.election);
        if (e.leader === null) {
          assert.equal(e.token, null);
          this.electionLeader.delete(e.election);
          return;
        }
        assert.ok(e.token !== null);
        if (prev && prev.session === e.leader && prev.token === e.token) return; // proclaim
        assert.equal(e.token, index, `a new leader's epoch is its entry's index ${where}`);
        assert.ok(e.token > (this.lastEpoch.get(e.election) ?? 0), `epochs only grow ${where}`);
        assert.ok(this.open.has(e.leader), `a closed session leads ${where}`);
        this.lastEpoch.set(e.election, e.token);
        this.electionLeader.set(e.election, { session: e.leader, token: e.token });
        return;
      }
      case 'kvChanged':
        assert.equal(e.revision, index, `kv revision is the entry index ${where}`);
        this.changes.push({ key: e.key, value: e.value, revision: e.revision });
        if (e.value === null) this.kvRevision.delete(e.key);
        else this.kvRevision.set(e.key, e.revision);
        return;
      case 'lockDelayStarted':
        assert.equal(e.since, index);
        this.delayed.add(e.name);
        return;
      case 'lockDelayEnded':
        assert.ok(this.delayed.delete(e.name), `lock-delay of ${e.name} ended but never started ${where}`);
        return;
    }
  }

  private dequeue(name: string, session: number, where: string): void {
    const q = this.queues.get(name) ?? [];
    const at = q.findIndex((w) => w.session === session);
    assert.ok(at >= 0, `cancelled a wait that was not queued ${where}`);
    q.splice(at, 1);
  }

  /** At most one exclusive holder, never with shared ones; shared holders within limits. */
  private checkLockInvariants(name: string, where: string): void {
    const h = [...(this.holders.get(name)?.values() ?? [])];
    const exclusive = h.filter((x) => x.mode === 'exclusive').length;
    assert.ok(exclusive <= 1, `${exclusive} exclusive holders of ${name} ${where}`);
    assert.ok(exclusive === 0 || h.length === 1, `exclusive and shared holders together on ${name} ${where}`);
    for (const x of h) {
      if (x.limit !== null) assert.ok(h.length <= x.limit, `${h.length} shared holders of ${name} over limit ${x.limit} ${where}`);
    }
  }

  /**
   * Progress: outside lock-delay, the first waiter must be one that cannot be granted now
   * (else the machine left a grant undone when a holder or waiter went away).
   */
  private checkNoIdleWait(name: string, where: string): void {
    const head = this.queues.get(name)?.[0];
    if (head === undefined || this.delayed.has(name)) return;
    const h = [...(this.holders.get(name)?.values() ?? [])];
    const blocked =
      head.mode === 'exclusive'
        ? h.length > 0
        : h.some((x) => x.mode === 'exclusive') || (head.limit !== null && h.length >= head.limit);
    assert.ok(blocked, `session ${head.session} waits for ${name} though it could be granted ${where}`);
  }

  private checkLedger(m: LockMachine, cmd: Command, applied: Applied, where: string): void {
    const r = applied.result;
    if (cmd.type === 'beginOp') {
      const op = this.ops.get(cmd.opKey);
      switch (r.type) {
        case 'run':
          assert.equal(op, undefined, `beginOp answered run twice for ${cmd.opKey} ${where}`);
          this.ops.set(cmd.opKey, { done: null });
          break;
        case 'retry':
        case 'inDoubt':
          assert.ok(op && op.done === null, `${r.type} for an op never run or already done ${where}`);
          break;
        case 'done':
          assert.ok(op && op.done !== null, `done for an op never completed ${where}`);
          assert.deepEqual(r.result, op.done, `done answers the recorded result ${where}`);
          break;
      }
      if (op?.done && r.type !== 'error') assert.equal(r.type, 'done', `a completed op answered ${r.type} ${where}`);
    }
    if (cmd.type === 'completeOp' && r.type === 'completed') {
      const op = this.ops.get(cmd.opKey);
      assert.ok(op && op.done === null, `completed an op not running ${where}`);
      op.done = cmd.result;
    }
    for (const key of this.u.opKeys) {
      if (!this.ops.has(key)) continue;
      if (m.op(key) === null) {
        assert.equal(cmd.type, 'pruneOps', `op ${key} vanished without pruning ${where}`);
        this.ops.delete(key);
      }
    }
  }

  private compareWithReads(m: LockMachine, cmd: Command, where: string): void {
    let holders = 0;
    let waiters = 0;
    for (const name of this.u.locks) {
      const info = m.lock(name);
      const h = this.holders.get(name) ?? new Map<number, Held>();
      const q = this.queues.get(name) ?? [];
      holders += h.size;
      waiters += q.length;
      const seen = (info?.holders ?? []).map((x) => [x.session, x.token, x.mode]).sort();
      const expected = [...h].map(([s, x]) => [s, x.token, x.mode]).sort();
      assert.deepEqual(seen, expected, `holders of ${name} differ from the history ${where}`);
      assert.deepEqual(
        (info?.waiters ?? []).map((w) => w.session),
        q.map((w) => w.session),
        `queue of ${name} differs from the history ${where}`,
      );
      for (const s of h.keys()) assert.ok(this.open.has(s), `closed session ${s} still holds ${name} ${where}`);
      this.checkLockInvariants(name, where);
      this.checkNoIdleWait(name, where);
      assert.equal(info?.delayed ?? false, this.delayed.has(name), `lock-delay state of ${name} ${where}`);
    }
    const stats = m.stats();
    assert.equal(stats.holders, holders, `holder count ${where}`);
    assert.equal(stats.waiters, waiters, `waiter count ${where}`);
    assert.equal(stats.sessions, this.open.size, `session count ${where}`);
    for (const e of this.u.elections) {
      const info = m.election(e);
      const leader = this.electionLeader.get(e);
      assert.deepEqual(
        info === null ? null : { session: info.leader, token: info.token },
        leader ?? null,
        `leader of ${e} ${where}`,
      );
    }
    for (const k of this.u.keys) {
      assert.equal(m.kvGet(k)?.revision ?? null, this.kvRevision.get(k) ?? null, `revision of ${k} ${where}`);
    }
    if (cmd.type === 'closeSession' || cmd.type === 'expireSession' || cmd.type === 'revokeSession') {
      const s = cmd.session;
      if (!this.open.has(s)) assert.equal(m.session(s), null, `session ${s} still readable after its end ${where}`);
    }
    assert.ok(isDeepStrictEqual(stats.appliedIndex, m.appliedIndex));
  }
}

function compareRevision(current: number, op: 'eq' | 'ne' | 'gt' | 'lt', revision: number): boolean {
  return op === 'eq' ? current === revision : op === 'ne' ? current !== revision : op === 'gt' ? current > revision : current < revision;
}
