// The small key-value space and the idempotency-key ledger, both guarded by fencing
// tokens: a write that carries a fence applies only while that lock is held right then
// with that token. For resources that cannot check a token themselves.
import type { BeginOpResult, Fence, KvEntry, ServerEvent } from '../protocol/client-protocol.js';
import { defaultDeadline, isRecord, type ClientCore } from './core.js';
import { FencedError, InDoubtError, InvalidArgumentError, LockLostError, PalisadeError } from './errors.js';
import { AsyncQueue } from './queue.js';

export type { KvEntry };

/** A value to store: bytes as they are, a string as its UTF-8 bytes. */
export type KvValue = Uint8Array | string;

/** A lock handle as the kv layer sees it (Lock implements it). */
export interface FenceHolder {
  readonly name: string;
  readonly token: number;
  readonly signal: AbortSignal;
  /** Throws LockLostError unless the handle is still believed held. */
  assertHeld(): void;
  /** @internal The cluster refused this holder's token: mark the handle lost and say so. */
  fencedOut(cause: FencedError): LockLostError;
}

export interface WriteOptions {
  /**
   * Apply only while this lock is held with this token. With a Lock handle a refusal throws
   * LockLostError (and the handle is lost); with a plain {lock, token} it throws FencedError.
   */
  readonly fence?: FenceHolder | Fence;
  /** Apply only if the key's revision is this (0: the key must not exist); else ConflictError. */
  readonly ifRevision?: number;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface PutResult {
  /** The key's new revision (the index of the write). */
  readonly revision: number;
}

export interface DeleteResult {
  readonly existed: boolean;
  /** The index of the delete when the key existed, else 0. */
  readonly revision: number;
}

/** One change under a watched prefix; value null means deleted. */
export interface KvChange {
  readonly key: string;
  readonly value: Uint8Array | null;
  /**
   * The index of the write. 0 for a deletion inferred while re-reading the prefix after a
   * reconnect (the deleting entry itself was not seen).
   */
  readonly revision: number;
}

export interface WatchOptions {
  /** Yield the keys that exist when the watch starts (as changes) before later changes. */
  readonly includeExisting?: boolean;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

function toBytes(value: KvValue): Uint8Array {
  return typeof value === 'string' ? textEncoder.encode(value) : value;
}

function isHolder(f: FenceHolder | Fence): f is FenceHolder {
  return 'assertHeld' in f;
}

function fenceOf(f: FenceHolder | Fence): Fence {
  if (isHolder(f)) {
    f.assertHeld();
    return { lock: f.name, token: f.token };
  }
  return { lock: f.lock, token: f.token };
}

/** Runs a fenced write; a refusal of a handle's token loses the handle. */
async function fenced<T>(fence: FenceHolder | Fence | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (e instanceof FencedError && fence && isHolder(fence)) throw fence.fencedOut(e);
    throw e;
  }
}

function deadlineOf(core: ClientCore, timeoutMs: number | undefined): number {
  return timeoutMs === undefined ? defaultDeadline(core) : core.clock.now() + timeoutMs;
}

export async function putKey(core: ClientCore, key: string, value: KvValue, options: WriteOptions = {}): Promise<PutResult> {
  checkKey(key);
  const fence = options.fence && fenceOf(options.fence);
  const bytes = toBytes(value);
  const result = await fenced(options.fence, () =>
    core.sessions.sequenced(
      () => ({
        op: 'put',
        key,
        value: bytes,
        ...(fence ? { fence } : {}),
        ...(options.ifRevision === undefined ? {} : { ifRevision: options.ifRevision }),
      }),
      { deadline: deadlineOf(core, options.timeoutMs), ...(options.signal ? { signal: options.signal } : {}) },
    ),
  );
  return { revision: intField(result, 'revision') };
}

export async function deleteKey(core: ClientCore, key: string, options: WriteOptions = {}): Promise<DeleteResult> {
  checkKey(key);
  const fence = options.fence && fenceOf(options.fence);
  const result = await fenced(options.fence, () =>
    core.sessions.sequenced(
      () => ({
        op: 'delete',
        key,
        ...(fence ? { fence } : {}),
        ...(options.ifRevision === undefined ? {} : { ifRevision: options.ifRevision }),
      }),
      { deadline: deadlineOf(core, options.timeoutMs), ...(options.signal ? { signal: options.signal } : {}) },
    ),
  );
  return { existed: isRecord(result) && result.existed === true, revision: intField(result, 'revision') };
}

/** Linearizable read of one key. */
export async function getKey(core: ClientCore, key: string, timeoutMs?: number): Promise<KvEntry | null> {
  checkKey(key);
  const result = await core.link.call(() => ({ op: 'kvGet', key }), { deadline: deadlineOf(core, timeoutMs) });
  return result === null || result === undefined ? null : parseEntry(result);
}

// ---- the ledger -----------------------------------------------------------------------------

export type InDoubtPolicy = 'throw' | 'retry-same-key';

export interface OnceOptions {
  /**
   * What to do when an earlier attempt began and never completed (its holder lost the lock
   * mid-way): 'throw' InDoubtError (default), or 'retry-same-key': run again with the same
   * idempotency key, for resources that deduplicate by it.
   */
  readonly inDoubt?: InDoubtPolicy;
  readonly timeoutMs?: number;
}

/** The operation to run at most once; its result must survive JSON (it is recorded as JSON). */
export type OnceFn<T> = (idempotencyKey: string, signal: AbortSignal) => T | Promise<T>;

/**
 * Runs `fn` at most once per `opKey` across every holder of the lock: beginOp (fenced);
 * `done` returns the recorded result; `run` runs fn and records its result with completeOp
 * (fenced: a holder that lost the lock meanwhile gets LockLostError, and its effect may
 * have happened).
 */
export async function runOnce<T>(
  core: ClientCore,
  holder: FenceHolder,
  opKey: string,
  fn: OnceFn<T>,
  options: OnceOptions = {},
): Promise<T> {
  if (typeof opKey !== 'string' || opKey === '') throw new InvalidArgumentError('opKey must be a non-empty string');
  const deadline = (): number => deadlineOf(core, options.timeoutMs);
  const begin = async (retry: boolean): Promise<BeginOpResult> => {
    const fence = fenceOf(holder);
    const result = await fenced(holder, () =>
      core.sessions.sequenced(() => ({ op: 'beginOp', opKey, fence, ...(retry ? { retry: true } : {}) }), {
        deadline: deadline(),
      }),
    );
    return parseBeginOpResult(result);
  };
  let begun = await begin(false);
  if (begun.status === 'inDoubt') {
    if (options.inDoubt !== 'retry-same-key') {
      throw new InDoubtError(opKey, begun.idempotencyKey, begun.attempt, begun.token);
    }
    begun = await begin(true);
    if (begun.status === 'inDoubt') throw new InDoubtError(opKey, begun.idempotencyKey, begun.attempt, begun.token);
  }
  if (begun.status === 'done') return decodeResult<T>(begun.result);
  const value = await fn(begun.idempotencyKey, holder.signal);
  const fence = { lock: holder.name, token: holder.token };
  const result = encodeResult(value);
  await fenced(holder, () =>
    core.sessions.sequenced(() => ({ op: 'completeOp', opKey, result, fence }), { deadline: deadline() }),
  );
  return value;
}

function encodeResult(value: unknown): Uint8Array {
  // undefined has no JSON form: record it as no bytes.
  return value === undefined ? new Uint8Array(0) : textEncoder.encode(JSON.stringify(value));
}

function decodeResult<T>(bytes: Uint8Array): T {
  // The caller's T is trusted to match what fn returned when the result was recorded.
  return (bytes.length === 0 ? undefined : JSON.parse(textDecoder.decode(bytes))) as T;
}

function parseBeginOpResult(v: unknown): BeginOpResult {
  if (isRecord(v)) {
    if (v.status === 'done' && v.result instanceof Uint8Array) return { status: 'done', result: v.result };
    if ((v.status === 'run' || v.status === 'inDoubt') && typeof v.idempotencyKey === 'string') {
      const attempt = typeof v.attempt === 'number' ? v.attempt : 0;
      if (v.status === 'run') return { status: 'run', idempotencyKey: v.idempotencyKey, attempt };
      return { status: 'inDoubt', idempotencyKey: v.idempotencyKey, attempt, token: typeof v.token === 'number' ? v.token : 0 };
    }
  }
  throw new PalisadeError('INTERNAL', 'malformed beginOp answer');
}

// ---- watches --------------------------------------------------------------------------------

/** A live stream of changes under one prefix. `for await` it; leaving the loop stops it. */
export interface KvWatch extends AsyncIterableIterator<KvChange> {
  /** Resolves once the cluster has the subscription (changes from then on are seen). */
  readonly ready: Promise<void>;
  close(): void;
}

class WatchStream {
  readonly queue: AsyncQueue<KvChange>;
  /** Revision last yielded (or baseline) per key: drops duplicates and replays. */
  private readonly known = new Map<string, number>();
  private baselined = false;
  private readonly includeExisting: boolean;

  constructor(queue: AsyncQueue<KvChange>, includeExisting: boolean) {
    this.queue = queue;
    this.includeExisting = includeExisting;
  }

  offer(change: KvChange): void {
    const seen = this.known.get(change.key);
    if (seen !== undefined && change.revision <= seen) return;
    this.known.set(change.key, change.revision);
    this.queue.push(change);
  }

  /**
   * The prefix's entries as a node read them after (re)subscribing. The first read is the
   * baseline; later ones fill in what the stream missed while disconnected.
   */
  resync(entries: readonly KvEntry[], complete: boolean): void {
    const first = !this.baselined;
    this.baselined = true;
    const present = new Set<string>();
    for (const e of entries) {
      present.add(e.key);
      if (first && !this.includeExisting) {
        if ((this.known.get(e.key) ?? 0) < e.revision) this.known.set(e.key, e.revision);
      } else {
        this.offer({ key: e.key, value: e.value, revision: e.revision });
      }
    }
    if (!first && complete) {
      for (const [key, revision] of this.known) {
        if (revision > 0 && !present.has(key)) {
          this.known.set(key, 0);
          this.queue.push({ key, value: null, revision: 0 });
        }
      }
    }
  }
}

/** Every watch of the client, by prefix: one server subscription per prefix. */
export class WatchHub {
  private readonly core: ClientCore;
  private readonly byPrefix = new Map<string, Set<WatchStream>>();

  constructor(core: ClientCore) {
    this.core = core;
  }

  watch(prefix: string, options: WatchOptions = {}): KvWatch {
    if (typeof prefix !== 'string') throw new InvalidArgumentError('prefix must be a string');
    let streams = this.byPrefix.get(prefix);
    if (!streams) this.byPrefix.set(prefix, (streams = new Set()));
    const queue = new AsyncQueue<KvChange>(() => this.unsubscribe(prefix, stream));
    const stream = new WatchStream(queue, options.includeExisting === true);
    streams.add(stream);
    const ready = this.subscribe(prefix, [stream]);
    ready.catch((e: unknown) => queue.end(e));
    return Object.assign(queue, { ready: ready.then(() => undefined), close: () => void queue.return() });
  }

  handleEvent(e: Extract<ServerEvent, { event: 'kvChanged' }>): void {
    for (const [prefix, streams] of this.byPrefix) {
      if (!e.key.startsWith(prefix)) continue;
      for (const s of streams) s.offer({ key: e.key, value: e.value, revision: e.revision });
    }
  }

  /** A new connection carries no subscriptions: renew them and catch up on what was missed. */
  resubscribeAll(): void {
    for (const [prefix, streams] of this.byPrefix) {
      this.subscribe(prefix, [...streams]).catch(() => {
        // The next reconnect tries again.
      });
    }
  }

  /** Ends every stream (the client is closing): readers see the end of the iteration. */
  endAll(): void {
    const all = [...this.byPrefix.values()].flatMap((streams) => [...streams]);
    this.byPrefix.clear();
    for (const s of all) s.queue.end();
  }

  private async subscribe(prefix: string, streams: readonly WatchStream[]): Promise<void> {
    const result = await this.core.link.call(() => ({ op: 'watch', prefix }), { deadline: defaultDeadline(this.core) });
    const entries = Array.isArray(result) ? result.map(parseEntry) : [];
    // A node answers with at most a page of entries; with a full page, absence proves nothing.
    const complete = entries.length < WATCH_PAGE;
    for (const s of streams) if (!s.queue.closed) s.resync(entries, complete);
  }

  private unsubscribe(prefix: string, stream: WatchStream): void {
    const streams = this.byPrefix.get(prefix);
    if (!streams?.delete(stream) || streams.size > 0) return;
    this.byPrefix.delete(prefix);
    this.core.link.call(() => ({ op: 'unwatch', prefix }), { deadline: defaultDeadline(this.core) }).catch(() => {});
  }
}

/** Entries a node returns for a watch's first read. */
const WATCH_PAGE = 1000;

function parseEntry(v: unknown): KvEntry {
  if (isRecord(v) && typeof v.key === 'string' && v.value instanceof Uint8Array && typeof v.revision === 'number') {
    return { key: v.key, value: v.value, revision: v.revision };
  }
  throw new PalisadeError('INTERNAL', 'malformed kv entry');
}

function intField(v: unknown, field: string): number {
  const x = isRecord(v) ? v[field] : undefined;
  return typeof x === 'number' ? x : 0;
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key === '') throw new InvalidArgumentError('key must be a non-empty string');
}
