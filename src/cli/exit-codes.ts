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
} as const;

/** Exit codes of the kv commands besides 0 (success) and 1 (any other failure). */
export const KV_EXIT = {
  /** `kv get`: no such key. */
  NOT_FOUND: 1,
  /** --if-revision did not match. */
  CONFLICT: 65,
  /** The cluster could not be reached or did not answer in time. */
  UNAVAILABLE: 69,
  /** --lock was not acquired within --wait. */
  WAIT_TIMEOUT: 74,
  /** The lock was lost before the fenced write applied (the cluster refused the token). */
  FENCED: 75,
  USAGE: 64,
} as const;
