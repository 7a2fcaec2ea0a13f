// Errors the SDK throws. Each has a stable `code` so callers can branch without parsing
// messages. Wire codes map onto these in errorFromWire; NOT_LEADER never reaches a caller
// (the SDK retries it on the leader) and UNKNOWN_SESSION surfaces as SessionExpiredError.
import type { ErrorCode, WireError } from '../protocol/client-protocol.js';

/** Codes of SDK errors: the wire's, plus the ones only the client can decide. */
export type ClientErrorCode =
  | ErrorCode
  | 'SESSION_EXPIRED'
  | 'LOCK_TIMEOUT'
  | 'LOCK_LOST'
  | 'IN_DOUBT'
  | 'CLIENT_CLOSED'
  | 'TOKEN_REGRESSION';

export interface PalisadeErrorOptions {
  readonly cause?: unknown;
}

/** Base class of every error the SDK throws (except StaleTokenError, which belongs to the fence). */
export class PalisadeError extends Error {
  readonly code: ClientErrorCode;

  constructor(code: ClientErrorCode, message: string, options: PalisadeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PalisadeError';
    this.code = code;
  }
}

/** No node could serve the request before the deadline; it was not applied. */
export class UnavailableError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('UNAVAILABLE', message, options);
    this.name = 'UnavailableError';
  }
}

/** The deadline passed without a definite answer: the operation may or may not have happened. */
export class TimeoutError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('TIMEOUT', message, options);
    this.name = 'TimeoutError';
  }
}

/** acquire's waitMs passed before the lock was granted (nothing is left held or queued). */
/**
 * The lock was not granted within waitMs. Nothing is held for the caller. `withdrawn` says
 * whether the cluster also confirmed that nothing is held or queued for this client on the
 * call's behalf; when false (the cluster did not answer in time), the SDK goes on
 * withdrawing in the background until it does, or until the session ends
 * (docs/protocol.md, "Deadlines").
 */
export class LockTimeoutError extends PalisadeError {
  readonly lockName: string;
  readonly withdrawn: boolean;
  constructor(lockName: string, waitMs: number, withdrawn = true) {
    super(
      'LOCK_TIMEOUT',
      `lock ${JSON.stringify(lockName)} was not granted within ${waitMs} ms${withdrawn ? '' : ' (the cluster did not answer in time: withdrawing in the background)'}`,
    );
    this.name = 'LockTimeoutError';
    this.lockName = lockName;
    this.withdrawn = withdrawn;
  }
}

/** The session ended (expired on the server, closed, or no longer vouched for by the client). */
export class SessionExpiredError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('SESSION_EXPIRED', message, options);
    this.name = 'SessionExpiredError';
  }
}

export class InvalidArgumentError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'InvalidArgumentError';
  }
}

/** A release, proclaim or resign by a session that does not hold the lock with that token. */
export class NotHolderError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('NOT_HOLDER', message, options);
    this.name = 'NotHolderError';
  }
}

/** A fenced write was refused: the lock is not held with the given token right now. */
export class FencedError extends PalisadeError {
  /** The token the lock has now (null when free). */
  readonly currentToken: number | null;
  constructor(message: string, currentToken: number | null, options?: PalisadeErrorOptions) {
    super('FENCED', message, options);
    this.name = 'FencedError';
    this.currentToken = currentToken;
  }
}

/** ifRevision did not match the key's current revision. */
export class ConflictError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('CONFLICT', message, options);
    this.name = 'ConflictError';
  }
}

/** A watch could not resume: the cluster's watch history no longer holds every change after
 *  the stream's revision (it keeps a bounded number, bytes and age of them). Changes were
 *  missed; start a new watch (its snapshot is the state to go on from). */
export class CompactedError extends PalisadeError {
  /** The oldest revision a watch may resume from now. */
  readonly compactRevision: number;
  constructor(message: string, compactRevision: number, options?: PalisadeErrorOptions) {
    super('COMPACTED', message, options);
    this.name = 'CompactedError';
    this.compactRevision = compactRevision;
  }
}

/** The lock (or leadership) handle was released or may have been lost; it can no longer be used. */
export class LockLostError extends PalisadeError {
  readonly lockName: string;
  constructor(lockName: string, why: string, options?: PalisadeErrorOptions) {
    super('LOCK_LOST', `lock ${JSON.stringify(lockName)} is no longer held: ${why}`, options);
    this.name = 'LockLostError';
    this.lockName = lockName;
  }
}

/**
 * The reason a handle's signal carries after an ordinary release: an expected end, built
 * without a stack trace, which would cost more than the rest of a release on a busy client.
 */
export function releasedReason(lockName: string, why = 'released'): LockLostError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new LockLostError(lockName, why);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * lock.once found an earlier attempt of the operation that began and never completed: its
 * effect may or may not have happened. Check the resource with `idempotencyKey`, or pass
 * `inDoubt: 'retry-same-key'` to run again with the same key.
 */
export class InDoubtError extends PalisadeError {
  readonly opKey: string;
  readonly idempotencyKey: string;
  readonly attempt: number;
  /** The fencing token of the holder that began the earlier attempt. */
  readonly token: number;
  constructor(opKey: string, idempotencyKey: string, attempt: number, token: number) {
    super('IN_DOUBT', `operation ${JSON.stringify(opKey)} (key ${idempotencyKey}) began before and may or may not have taken effect`);
    this.name = 'InDoubtError';
    this.opKey = opKey;
    this.idempotencyKey = idempotencyKey;
    this.attempt = attempt;
    this.token = token;
  }
}

/**
 * A node answered a grant (a lock, or a leadership) whose fencing token is not above the
 * highest token this client had already accepted from its cluster when it asked: tokens are
 * log indexes, and an entry appended after the client saw token T has an index above T, so
 * such a grant is not one the cluster made (docs/protocol.md §7, "The client's token
 * floor"). Nothing is held: the SDK withdraws whatever the request may have done in the
 * real cluster, and sets the node that answered aside. A definite error: do not retry
 * against the same node; the next call goes to another.
 */
export class TokenRegressionError extends PalisadeError {
  /** The lock or election the grant was for. */
  readonly lockName: string;
  /** The token the node answered. */
  readonly token: number;
  /** The highest token this client had accepted when it sent the request. */
  readonly floor: number;
  /** The node that answered (its client URL). */
  readonly url: string;
  constructor(lockName: string, token: number, floor: number, url: string) {
    super(
      'TOKEN_REGRESSION',
      `${url} granted ${JSON.stringify(lockName)} with fencing token ${token}, not above ${floor}, the highest this client had accepted from its cluster before asking: refused, and the node is set aside`,
    );
    this.name = 'TokenRegressionError';
    this.lockName = lockName;
    this.token = token;
    this.floor = floor;
    this.url = url;
  }
}

export class PermissionDeniedError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('PERMISSION_DENIED', message, options);
    this.name = 'PermissionDeniedError';
  }
}

export class UnauthenticatedError extends PalisadeError {
  constructor(message: string, options?: PalisadeErrorOptions) {
    super('UNAUTHENTICATED', message, options);
    this.name = 'UnauthenticatedError';
  }
}

/** The client was closed while the operation was pending, or used after close(). */
export class ClientClosedError extends PalisadeError {
  constructor() {
    super('CLIENT_CLOSED', 'the client is closed');
    this.name = 'ClientClosedError';
  }
}

/** The typed error for a node's error answer. */
export function errorFromWire(error: WireError): PalisadeError {
  const message = error.message;
  switch (error.code) {
    case 'UNAVAILABLE':
    case 'NOT_LEADER':
      return new UnavailableError(message);
    case 'TIMEOUT':
      return new TimeoutError(message);
    case 'UNKNOWN_SESSION':
      return new SessionExpiredError(message);
    case 'INVALID_ARGUMENT':
      return new InvalidArgumentError(message);
    case 'NOT_HOLDER':
      return new NotHolderError(message);
    case 'FENCED':
      return new FencedError(message, error.currentToken ?? null);
    case 'CONFLICT':
      return new ConflictError(message);
    case 'COMPACTED':
      return new CompactedError(message, error.compactRevision ?? 0);
    case 'PERMISSION_DENIED':
      return new PermissionDeniedError(message);
    case 'UNAUTHENTICATED':
      return new UnauthenticatedError(message);
    default:
      return new PalisadeError(error.code, message);
  }
}
