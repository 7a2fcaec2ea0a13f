// The three ways a fenced operation fails, each with a stable `code` so callers (and the
// client protocol, which speaks in codes) can branch without parsing messages.

/** A token lower than the highest the resource has accepted: the caller's lock is stale. */
export class StaleTokenError extends Error {
  readonly code = 'STALE_TOKEN' as const;
  /** The resource that refused the token. */
  readonly resource: string;
  /** The token that was refused. */
  readonly token: bigint;
  /** The highest token the resource had accepted when it refused this one. */
  readonly fence: bigint;

  constructor(resource: string, token: bigint, fence: bigint) {
    super(`stale fencing token ${token} for resource ${JSON.stringify(resource)}: it has already accepted ${fence}`);
    this.name = 'StaleTokenError';
    this.resource = resource;
    this.token = token;
    this.fence = fence;
  }
}

/** A token or resource name that is not acceptable at all (a programming error, not a race). */
export class FenceInputError extends Error {
  readonly code = 'INVALID_ARGUMENT' as const;

  constructor(message: string) {
    super(message);
    this.name = 'FenceInputError';
  }
}

/**
 * The fence store could not be reached, so nothing was decided. `maybeCommitted` is true
 * only when the connection was lost while COMMIT was in flight: the transaction then either
 * committed whole or not at all, and only reading the data again can tell which.
 */
export class FenceUnavailableError extends Error {
  readonly code = 'UNAVAILABLE' as const;
  readonly maybeCommitted: boolean;

  constructor(message: string, options: { cause?: unknown; maybeCommitted?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FenceUnavailableError';
    this.maybeCommitted = options.maybeCommitted ?? false;
  }
}
