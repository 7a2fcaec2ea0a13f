// Exit codes of the `palisade` commands, in one place (the table in docs/cli.md lists them).
// Kept free of imports so that the command-line parser can name them without loading the SDK.

/** Exit codes of `palisade lock` and `palisade elect` besides the command's own status. */
export const EXIT = {
  /** The lease was lost while the command ran; the command was terminated. */
  LEASE_LOST: 75,
  /** The lock was not acquired within --wait. */
  WAIT_TIMEOUT: 74,
  /** The cluster could not be reached or did not answer. */
  UNAVAILABLE: 69,
  /** The cluster refused the token (UNAUTHENTICATED), or it does not allow this (PERMISSION_DENIED). */
  DENIED: 77,
  /** A bad command line or argument (commander uses 1 for its own parse errors: see docs/cli.md). */
  USAGE: 64,
} as const;

/** Exit codes of the kv commands besides 0 (success) and 1 (any other failure). */
export const KV_EXIT = {
  /** `kv get`: no such key. */
  NOT_FOUND: 1,
  /** --if-revision did not match; `kv txn`: a compare did not hold (the failure branch applied). */
  CONFLICT: 65,
  /** `kv watch --from-revision`: the cluster's watch history no longer reaches back that far. */
  COMPACTED: 66,
  /** The cluster could not be reached or did not answer in time. */
  UNAVAILABLE: 69,
  /** --lock was not acquired within --wait. */
  WAIT_TIMEOUT: 74,
  /** The lock was lost before the fenced write applied (the cluster refused the token). */
  FENCED: 75,
  DENIED: 77,
  USAGE: 64,
} as const;

/** Exit codes of `palisade health`, for cron and load balancers (as Nagios plugins: 0 OK,
 *  1 warning, 2 critical). */
export const HEALTH_EXIT = {
  /** Every member up, with a failure to spare. */
  healthy: 0,
  /** Writes go on, but a member is down or the cluster survives no further failure. */
  degraded: 1,
  /** No quorum or no leader (or no node answered): writes stop. */
  lost: 2,
} as const;

/** Exit codes of `palisade serve` (the systemd unit's restart policy follows them). */
export const SERVE_EXIT = {
  /** Stopped by SIGTERM/SIGINT, or removed from the cluster. */
  STOPPED: 0,
  /** Refused to run: a config or data-directory error at start, or the cluster refused this
   *  node's storage identity. Restarting cannot mend it; an operator must act. */
  REFUSED: 1,
  /** Its storage failed while running (a full disk, an I/O error): it stopped within a
   *  second. Restarting is right once the disk is mended; a node that comes back catches up. */
  STORAGE_FAILED: 2,
} as const;

/** How long a node whose storage failed may take to stop before it exits regardless. */
export const FATAL_EXIT_WITHIN_MS = 500;

/** A command line the command cannot use (exit USAGE). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const DENIED = new Set(['UNAUTHENTICATED', 'PERMISSION_DENIED']);
const UNAVAILABLE = new Set(['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER', 'TOO_MANY_CONNECTIONS']);

/** The exit code for a failure of the SDK (PalisadeError) or of a one-shot request (RpcError). */
export function exitCodeFor(e: unknown): number {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (DENIED.has(code)) return EXIT.DENIED;
    if (UNAVAILABLE.has(code)) return EXIT.UNAVAILABLE;
    if (code === 'INVALID_ARGUMENT') return EXIT.USAGE;
  }
  if (e instanceof UsageError) return EXIT.USAGE;
  return 1;
}
