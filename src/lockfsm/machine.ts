// LockMachine: what the Raft log replicates. Same entries in, same state, results and
// events out, on every node. It reads no clock, draws no random numbers, does no I/O and
// sets no timers: everything that depends on time reaches it as a command the leader
// proposes (expireSession, lockDelayElapsed, pruneOps, and the `at` stamps of the ledger).
//
// Nor does it read a node's config: every bound it applies is a setting it holds as state
// (config.ts), changed only by a committed `configure` entry. A new cluster's first leader
// seeds them from its file before it proposes anything else, so on every node every command
// applies under the settings of the log, whatever each node's file says.
//
// Cluster time: the ledger needs ages, and the machine has no clock, so entries that need a
// time carry one (`at`). The leader stamps max(the machine's clock, its start value plus its
// own monotonic time since it took office), where the start value is the machine's clock
// (the wall clock only for a cluster that never had one). A stamp is never behind an earlier
// stamp, and a step of any node's wall clock ages nothing (server/leases/cluster-clock.ts).
//
// apply() never throws for a bad command: it answers a typed error, and the entry still
// counts as applied. It throws only when the caller breaks the contract of strictly
// increasing log indexes, which would break the token rule and must stop the node.

import type { ApplyContext } from './context.js';
import { canonicalSettings, checkMachineConfig, DEFAULT_MACHINE_CONFIG, settingsDiff, settingsProblem, type MachineConfig } from './config.js';
import { decodeCommand } from './codec.js';
import { ElectionTable } from './elections.js';
import { invalidArgument, limitExceeded, unknownSession, withToken } from './errors.js';
import { KvStore } from './kv.js';
import { OpLedger } from './ledger.js';
import { LockTable } from './locks.js';
import { SessionTable, type SessionRecord } from './sessions.js';
import { decodeSnapshot, encodeSnapshot, SnapshotEncoder } from './snapshot.js';
import { SnapshotError } from './snapshot-reader.js';
import type {
  Applied,
  Command,
  ConfigureCommand,
  ElectionInfo,
  ExpireSessionCommand,
  Fence,
  HistoryRead,
  KvEntry,
  MachineLockInfo,
  MachineError,
  MachineStats,
  OkResult,
  OpInfo,
  OpenSessionCommand,
  PendingLockDelay,
  PruneCriteria,
  PruneOpsCommand,
  Result,
  ResultFor,
  RevokeSessionCommand,
  SessionCommand,
  SessionInfo,
  SessionLease,
} from './types.js';
import { COMMAND_TYPES, validateCommand } from './validate.js';

const OK: OkResult = Object.freeze({ type: 'ok' });
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export class LockMachine {
  private current: MachineConfig;
  private configuredYet = false;
  private clockMs = 0;
  private index = 0;
  private readonly sessionTable: SessionTable;
  private readonly lockTable: LockTable;
  private readonly electionTable: ElectionTable;
  private readonly kv: KvStore;
  private readonly ledger: OpLedger;

  /**
   * `unconfigured`: the settings until the first `configure` entry. Only logs written before
   * settings were replicated have commands there (a leader now seeds the settings before it
   * proposes anything else), so a node passes the values its file gives, which those logs
   * were applied with; any other caller can leave the defaults.
   */
  constructor(unconfigured: MachineConfig = DEFAULT_MACHINE_CONFIG) {
    this.current = canonicalSettings(checkMachineConfig(unconfigured));
    const settings = (): MachineConfig => this.current;
    this.sessionTable = new SessionTable(settings);
    this.lockTable = new LockTable(settings);
    this.electionTable = new ElectionTable(settings);
    this.kv = new KvStore(settings);
    this.ledger = new OpLedger(settings);
  }

  /** The cluster's settings as of the applied index. */
  get settings(): MachineConfig {
    return this.current;
  }

  /** Whether a `configure` entry has set the settings (false: a leader should seed them). */
  get configured(): boolean {
    return this.configuredYet;
  }

  /** The cluster's time: the latest `at` an applied entry carried (0: none yet). */
  get clock(): number {
    return this.clockMs;
  }

  /** The last index passed to apply, applyRaw or skip (0 before any). */
  get appliedIndex(): number {
    return this.index;
  }

  // ---- applying entries ----------------------------------------------------------------

  /**
   * Applies the command of the entry at `index` (strictly greater than appliedIndex).
   * The command is validated first, so a typed object carrying bad values at run time is
   * answered with an error like bad bytes are.
   */
  apply<C extends Command>(index: number, cmd: C): Applied<ResultFor<C>> {
    this.advance(index);
    const checked = validateCommand(cmd, this.current);
    const applied = checked.type === 'error' ? { result: checked, events: [] } : this.execute(index, checked);
    return applied as Applied<ResultFor<C>>;
  }

  /** Decodes, validates and applies an entry's bytes; malformed bytes give an error result. */
  applyRaw(index: number, data: Uint8Array): Applied {
    this.advance(index);
    const cmd = decodeCommand(data, this.current);
    return cmd.type === 'error' ? { result: cmd, events: [] } : this.execute(index, cmd);
  }

  /** Advances appliedIndex over an entry that carries no command (no-op, conf change). */
  skip(index: number): void {
    this.advance(index);
  }

  private advance(index: number): void {
    if (!Number.isSafeInteger(index) || index <= this.index) {
      throw new RangeError(`lockfsm: entry index ${index} does not follow the applied index ${this.index}`);
    }
    this.index = index;
  }

  private execute(index: number, cmd: Command): Applied {
    const ctx: ApplyContext = { index, events: [] };
    let result: Result;
    switch (cmd.type) {
      case 'openSession':
        result = this.openSession(ctx, cmd);
        break;
      case 'expireSession':
        result = this.expireSession(ctx, cmd);
        break;
      case 'revokeSession':
        result = this.revokeSession(ctx, cmd);
        break;
      case 'lockDelayElapsed':
        result = this.lockTable.endLockDelay(ctx, cmd.name, cmd.since);
        break;
      case 'pruneOps':
        result = this.pruneOps(cmd);
        break;
      case 'configure':
        result = this.configure(ctx, cmd);
        break;
      case 'checkpoint':
        result = { type: 'checkpoint' };
        break;
      default:
        result = this.applySessionCommand(ctx, cmd);
    }
    return { result, events: ctx.events };
  }

  private configure(ctx: ApplyContext, cmd: ConfigureCommand): Result {
    // A seed applies only to a machine never configured: the first one to commit wins, and
    // a leader elected before it applied (which proposed a seed of its own) changes nothing.
    if (cmd.initial === true && this.configuredYet) return { type: 'settings', settings: this.current, changed: [] };
    // Until the first configure, the settings in force are the node's own (see the
    // constructor): what the entry answers must not depend on them, so the first one
    // starts from the defaults every node has.
    const base = this.configuredYet ? this.current : DEFAULT_MACHINE_CONFIG;
    // The settings before this build knew of some (a log written then, never configured
    // since) are the defaults of the ones it adds.
    const next = canonicalSettings({ ...DEFAULT_MACHINE_CONFIG, ...base, ...cmd.settings });
    const problem = settingsProblem(next as unknown as Readonly<Record<string, unknown>>);
    if (problem !== null) return invalidArgument(problem);
    const changed = settingsDiff(base, next);
    this.current = next;
    this.configuredYet = true;
    // A lowered history bound drops what it no longer allows now, on every node alike.
    this.kv.history.trim(this.clockMs);
    if (changed.length > 0) ctx.events.push({ type: 'settingsChanged', changed });
    return { type: 'settings', settings: next, changed };
  }

  /** Moves the cluster's time forward to `at` (a stamp never moves it back). */
  private tick(at: number): void {
    if (at <= this.clockMs) return;
    if (this.clockMs === 0) this.kv.history.dateUndated(at);
    this.clockMs = at;
  }

  private pruneOps(cmd: PruneOpsCommand): Result {
    if (cmd.at === undefined) return this.ledger.prune({ olderThan: cmd.olderThan!, ...(cmd.abandonedOlderThan !== undefined ? { abandonedOlderThan: cmd.abandonedOlderThan } : {}), ...(cmd.max !== undefined ? { max: cmd.max } : {}) });
    this.tick(cmd.at);
    // The cluster's time moved: the watch history ages too.
    this.kv.history.trim(this.clockMs);
    return this.ledger.prune(this.pruneCriteria(cmd.at, cmd.max));
  }

  /** What a pruneOps stamped `at` drops: ages by the cluster's retention settings. */
  private pruneCriteria(at: number, max: number | undefined): PruneCriteria {
    const { ledgerRetentionMs, ledgerAbandonedAfterMs } = this.current;
    return { olderThan: at - ledgerRetentionMs, abandonedOlderThan: at - ledgerAbandonedAfterMs, ...(max !== undefined ? { max } : {}) };
  }

  private openSession(ctx: ApplyContext, cmd: OpenSessionCommand): Result {
    // Every node applies the same entries with the same bound, so all refuse the same opens.
    const { maxSessions, maxSessionsPerOwner } = this.current;
    if (this.sessionTable.size >= maxSessions) {
      return limitExceeded(`${this.sessionTable.size} sessions are open, the cluster's limit (sessions.maxSessions); close some or retry later`);
    }
    if (cmd.owner !== undefined && this.sessionTable.ownedBy(cmd.owner) >= maxSessionsPerOwner) {
      return limitExceeded(`token "${cmd.owner}" has ${this.sessionTable.ownedBy(cmd.owner)} sessions open, the limit per token (sessions.maxSessionsPerToken); close some first`);
    }
    // The id is the entry's index: unique cluster-wide and never reused.
    const label = cmd.label ?? null;
    this.sessionTable.open(ctx.index, cmd.ttlMs, label, cmd.owner ?? null);
    ctx.events.push({ type: 'sessionOpened', session: ctx.index, ttlMs: cmd.ttlMs, label });
    return { type: 'session', session: ctx.index, ttlMs: cmd.ttlMs };
  }

  private expireSession(ctx: ApplyContext, cmd: ExpireSessionCommand): Result {
    const rec = this.sessionTable.get(cmd.session);
    if (rec === undefined) return unknownSession(cmd.session);
    ctx.events.push({ type: 'sessionExpired', session: rec.id, reason: 'expire' });
    this.endSession(ctx, rec, 'expire');
    return OK;
  }

  /** An operator ends a session: exactly an expiry (its locks may enter lock-delay, since
   *  its holder may still be acting on them; the holder's clients learn it from the same
   *  sessionExpired event), told apart only by the event's reason. */
  private revokeSession(ctx: ApplyContext, cmd: RevokeSessionCommand): Result {
    const rec = this.sessionTable.get(cmd.session);
    if (rec === undefined) return unknownSession(cmd.session);
    ctx.events.push({
      type: 'sessionExpired',
      session: rec.id,
      reason: 'revoke',
      ...(cmd.reason !== undefined ? { detail: cmd.reason } : {}),
      ...(cmd.by !== undefined ? { by: cmd.by } : {}),
    });
    this.endSession(ctx, rec, 'expire');
    return OK;
  }

  /** Frees what the session holds, waits for and leads, and deletes its ephemeral keys. */
  private endSession(ctx: ApplyContext, rec: SessionRecord, reason: 'close' | 'expire'): void {
    this.lockTable.dropSession(ctx, rec, reason);
    this.electionTable.dropSession(ctx, rec);
    this.kv.dropSession(ctx, rec, this.clockMs);
    this.sessionTable.remove(rec);
  }

  /** Whether `rec` holds `lock` right now with exactly `token` (fences, txn lock compares). */
  private holds(rec: SessionRecord, lock: string, token: number): boolean {
    return this.lockTable.tokenOf(lock, rec.id) === token;
  }

  /** The idempotency layer, then the fence, then the command itself. */
  private applySessionCommand(ctx: ApplyContext, cmd: SessionCommand): Result {
    const rec = this.sessionTable.get(cmd.session);
    if (rec === undefined) return unknownSession(cmd.session);
    const admission = this.sessionTable.admit(rec, cmd);
    if (admission.kind === 'answer') return admission.result;
    const result = (cmd.fence && this.checkFence(rec, cmd.fence)) || this.run(ctx, rec, cmd);
    // A closed session keeps nothing: a retried close answers UNKNOWN_SESSION.
    if (cmd.type !== 'closeSession' || result.type === 'error') {
      this.sessionTable.remember(rec, cmd, result);
    }
    return result;
  }

  /** FENCED unless `rec` holds `fence.lock` right now with exactly `fence.token`. */
  private checkFence(rec: SessionRecord, fence: Fence): MachineError | null {
    if (this.holds(rec, fence.lock, fence.token)) return null;
    return withToken(
      'FENCED',
      `session ${rec.id} does not hold lock ${JSON.stringify(fence.lock)} with token ${fence.token}`,
      this.lockTable.currentToken(fence.lock),
    );
  }

  private run(ctx: ApplyContext, rec: SessionRecord, cmd: SessionCommand): Result {
    switch (cmd.type) {
      case 'closeSession':
        ctx.events.push({ type: 'sessionClosed', session: rec.id });
        this.endSession(ctx, rec, 'close');
        return OK;
      case 'acquire':
        return this.lockTable.acquire(ctx, rec, {
          name: cmd.name,
          mode: cmd.mode,
          limit: cmd.limit ?? null,
          wait: cmd.wait,
          lockDelayMs: cmd.lockDelayMs ?? this.current.defaultLockDelayMs,
        });
      case 'release':
        return this.lockTable.release(ctx, rec, cmd.name, cmd.token);
      case 'cancelWait':
        return this.lockTable.cancelWait(ctx, rec, cmd.name);
      case 'campaign':
        return this.electionTable.campaign(ctx, rec, cmd.election, cmd.value);
      case 'proclaim':
        return this.electionTable.proclaim(ctx, rec, cmd.election, cmd.token, cmd.value);
      case 'resign':
        return this.electionTable.resign(ctx, rec, cmd.election, cmd.token);
      case 'put':
        return this.kv.put(ctx, rec, cmd.key, cmd.value, cmd.ifRevision, cmd.ephemeral === true, this.clockMs);
      case 'delete':
        return this.kv.delete(ctx, cmd.key, cmd.ifRevision, this.clockMs);
      case 'txn':
        return this.kv.txn(ctx, rec, cmd, (lock, token) => this.holds(rec, lock, token), this.clockMs);
      case 'beginOp':
        this.tick(cmd.at);
        return this.ledger.begin(ctx, rec.id, rec.owner, cmd.opKey, cmd.fence, cmd.retry ?? false, cmd.at);
      case 'completeOp':
        this.tick(cmd.at);
        return this.ledger.complete(rec.id, cmd.opKey, cmd.fence, cmd.result, cmd.at);
    }
  }

  /**
   * The state a new cluster built from this one starts with (a restored backup, a cluster
   * recovered from one survivor): every session ends as if closed (its locks are freed
   * without lock-delay, its elections and waits withdrawn), and the applied index moves to
   * `index`, the new cluster's first snapshot. Sessions belong to the cluster that
   * granted them: no client of the old cluster can keep one alive in the new one, so a
   * restored hold would otherwise block its lock until an expiry. The tokens of the freed
   * holds are at most the old applied index, below every token granted after `index`.
   * Returns how many sessions ended.
   */
  startNewCluster(index: number): number {
    this.advance(index);
    const ctx: ApplyContext = { index, events: [] };
    const ended = [...this.sessionTable.values()];
    for (const rec of ended) this.endSession(ctx, rec, 'close');
    return ended.length;
  }

  // ---- reads (served after ReadIndex) --------------------------------------------------
  // Returned byte arrays are the machine's own: callers must not modify them.

  lock(name: string): MachineLockInfo | null {
    return this.lockTable.info(name);
  }

  /** Locks whose name starts with `prefix`, in code-unit order. O(all locks) per call. */
  locks(prefix = '', limit = NO_LIMIT): MachineLockInfo[] {
    return this.lockTable.list(prefix, limit);
  }

  session(id: number): SessionInfo | null {
    const rec = this.sessionTable.get(id);
    return rec === undefined ? null : this.sessionInfo(rec);
  }

  /** The TTL of session `id`, undefined when it is not open. */
  sessionTtlMs(id: number): number | undefined {
    return this.sessionTable.get(id)?.ttlMs;
  }

  /** The token name that opened session `id` (null: opened without one); undefined when
   *  there is no such session. O(1), unlike session(). */
  sessionOwner(id: number): string | null | undefined {
    return this.sessionTable.get(id)?.owner;
  }

  *sessions(): IterableIterator<SessionInfo> {
    for (const rec of this.sessionTable.values()) yield this.sessionInfo(rec);
  }

  /** Id and TTL of every open session: what a new leader needs to arm lease timers. */
  *sessionLeases(): IterableIterator<SessionLease> {
    for (const rec of this.sessionTable.values()) yield { session: rec.id, ttlMs: rec.ttlMs, label: rec.label };
  }

  election(name: string): ElectionInfo | null {
    return this.electionTable.info(name);
  }

  elections(prefix = '', limit = NO_LIMIT): ElectionInfo[] {
    return this.electionTable.list(prefix, limit);
  }

  kvGet(key: string): KvEntry | null {
    return this.kv.get(key);
  }

  /** Keys starting with `prefix`, in code-unit order. O(all keys) per call. */
  kvRange(prefix: string, limit = NO_LIMIT): KvEntry[] {
    return this.kv.range(prefix, limit);
  }

  /** The changes to keys under `prefix` after revision `from`, from the watch history (at
   *  most about `maxChanges`, `maxBytes` and `maxScan` changes looked at, cut between
   *  revisions), or that some were dropped. */
  kvHistory(from: number, prefix: string, maxChanges = NO_LIMIT, maxBytes = NO_LIMIT, maxScan = NO_LIMIT): HistoryRead {
    return this.kv.history.since(from, prefix, maxChanges, maxBytes, maxScan);
  }

  /** The oldest revision a watch may resume from (the highest one the history dropped). */
  get historyCompactedThrough(): number {
    return this.kv.history.compactedThrough;
  }

  /** Locks in lock-delay: a new leader arms a timer for each (a full delayMs, to be safe). */
  pendingLockDelays(): IterableIterator<PendingLockDelay> {
    return this.lockTable.pendingDelays();
  }

  op(opKey: string): OpInfo | null {
    return this.ledger.info(opKey);
  }

  /** How many operations a pruneOps stamped `at` would drop (propose it only when > 0). */
  opsToPrune(at: number, max?: number): number {
    return this.ledger.countPrunable(this.pruneCriteria(at, max));
  }

  stats(): MachineStats {
    return {
      appliedIndex: this.index,
      sessions: this.sessionTable.size,
      locks: this.lockTable.size,
      holders: this.lockTable.holders,
      waiters: this.lockTable.waiters,
      locksInDelay: this.lockTable.delayedCount,
      elections: this.electionTable.size,
      candidates: this.electionTable.candidates,
      kvKeys: this.kv.size,
      kvBytes: this.kv.bytes,
      ops: this.ledger.size,
      opsRunning: this.ledger.runningCount,
      ledgerBytes: this.ledger.bytes,
      electionBytes: this.electionTable.bytes,
      pendingResults: this.sessionTable.pendingResults,
      historyEntries: this.kv.history.size,
      historyBytes: this.kv.history.bytes,
    };
  }

  private sessionInfo(rec: SessionRecord): SessionInfo {
    return {
      id: rec.id,
      ttlMs: rec.ttlMs,
      label: rec.label,
      owner: rec.owner,
      locks: [...rec.held].sort().map((name) => ({ name, ...this.lockTable.holdOf(name, rec.id)! })),
      waits: [...rec.waits].sort().map((name) => ({ name, mode: this.lockTable.waitModeOf(name, rec.id)! })),
      elections: [...rec.elections].sort(),
      ephemeralKeys: [...rec.ephemerals].sort(),
      pendingResults: rec.answers.length,
      ackedSeq: rec.ackedSeq,
    };
  }

  // ---- snapshots -----------------------------------------------------------------------

  /** The full state (sessions with their kept answers, locks, elections, kv, ledger). */
  snapshot(): Uint8Array {
    const body = this.snapshotBody(this.sessionTable.toSnapshot());
    return encodeSnapshot({ ...body, history: body.history.slice(0, body.history.length) });
  }

  /** The state as of now, copied now and encoded by the caller a slice at a time (the same
   *  bytes as snapshot()): the machine may apply more entries between the slices. */
  snapshotEncoder(): SnapshotEncoder {
    return new SnapshotEncoder(this.snapshotBody(this.sessionTable.snapshotRows()));
  }

  private snapshotBody<S>(sessions: S) {
    const ledger = this.ledger.toSnapshot();
    return {
      appliedIndex: this.index,
      settings: this.configuredYet ? this.current : null,
      clock: this.clockMs,
      historyCompacted: this.kv.history.compactedThrough,
      sessions,
      locks: this.lockTable.toSnapshot(),
      elections: this.electionTable.toSnapshot(),
      kv: this.kv.toSnapshot(),
      ledgerRunning: ledger.running,
      ledgerDone: ledger.done,
      history: this.kv.history.snapshotRows(),
    };
  }

  /** Rebuilds a machine from snapshot(). Bad or truncated bytes throw a SnapshotError.
   *  `unconfigured`: as for the constructor, for a snapshot of a machine never configured. */
  static restore(data: Uint8Array, unconfigured: MachineConfig = DEFAULT_MACHINE_CONFIG): LockMachine {
    const body = decodeSnapshot(data);
    const m = new LockMachine(body.settings ?? unconfigured);
    try {
      m.configuredYet = body.settings !== null;
      m.clockMs = body.clock;
      m.index = body.appliedIndex;
      const session = (id: number): SessionRecord | undefined => m.sessionTable.get(id);
      m.sessionTable.restore(body.sessions, body.appliedIndex, COMMAND_TYPES);
      m.lockTable.restore(body.locks, session, body.appliedIndex);
      m.electionTable.restore(body.elections, session, body.appliedIndex);
      m.kv.restore(body.kv, body.appliedIndex, session);
      m.kv.history.restore(body.history, body.historyCompacted, body.appliedIndex);
      m.ledger.restore(body.ledgerRunning, body.ledgerDone, body.appliedIndex);
    } catch (err) {
      if (err instanceof SnapshotError) throw err;
      throw new SnapshotError(`inconsistent data (${err instanceof Error ? err.message : String(err)})`);
    }
    return m;
  }
}
