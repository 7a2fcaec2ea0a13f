// The small key-value space and the idempotency-key ledger, both guarded by fencing
// tokens: a write that carries a fence applies only while that lock is held right then
// with that token. For resources that cannot check a token themselves.
import type { BeginOpResult, Fence, KvEntry } from '../protocol/client-protocol.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { FencedError, InDoubtError, InvalidArgumentError, LockLostError, SessionExpiredError } from './errors.js';

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

export interface PutOptions extends WriteOptions {
  /**
   * Tie the key to this client's session (an ephemeral key: Consul's session keys, ZooKeeper's
   * ephemeral nodes): the cluster deletes it in the entry that ends the session, by close,
   * expiry or an operator's revoke, and watchers see the delete. `true`: the current session;
   * a session id (`client.sessionId`): only while that session is the current one, else
   * SessionExpiredError (a key meant for an ended session is not tied to its successor).
   */
  readonly session?: true | number;
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

export async function putKey(core: ClientCore, key: string, value: KvValue, options: PutOptions = {}): Promise<PutResult> {
  checkKey(key);
  const fence = options.fence && fenceOf(options.fence);
  const bytes = toBytes(value);
  const deadline = deadlineOf(core, options.timeoutMs);
  const tied = options.session === undefined ? undefined : await tiedSession(core, options.session, deadline, options.signal);
  const result = await fenced(options.fence, () =>
    core.sessions.sequenced(
      () => ({
        op: 'put',
        key,
        value: bytes,
        ...(fence ? { fence } : {}),
        ...(options.ifRevision === undefined ? {} : { ifRevision: options.ifRevision }),
        ...(tied ? { ephemeral: true } : {}),
      }),
      { deadline, ...(options.signal ? { signal: options.signal } : {}), ...(tied ? { session: tied } : {}) },
    ),
  );
  return { revision: result.revision };
}

/** The session an ephemeral put is tied to: the current one, or the one named if it still is. */
async function tiedSession(core: ClientCore, which: true | number, deadline: number, signal: AbortSignal | undefined) {
  if (which === true) return core.sessions.ensure(deadline, signal);
  if (!Number.isSafeInteger(which) || which < 1) throw new InvalidArgumentError('session must be true or a session id');
  const current = core.sessions.active;
  if (current?.id !== which) throw new SessionExpiredError(`session ${which} is not this client's session any more${current ? ` (it is ${current.id})` : ''}: the key was not written`);
  return current;
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
  return { existed: result.existed, revision: result.revision };
}

/** Linearizable read of one key. */
export async function getKey(core: ClientCore, key: string, timeoutMs?: number): Promise<KvEntry | null> {
  checkKey(key);
  return core.link.call(() => ({ op: 'kvGet', key }), { deadline: deadlineOf(core, timeoutMs) });
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
    return result;
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



function checkKey(key: string): void {
  if (typeof key !== 'string' || key === '') throw new InvalidArgumentError('key must be a non-empty string');
}
