// The one operation a fence needs from storage. Anything that can do a conditional
// "raise if not lower" atomically per key can back a FenceGuard.

/** The outcome of FenceStore.raise. */
export interface RaiseResult {
  /** True when the token was not lower than the fence, which now equals the token. */
  accepted: boolean;
  /** The fence after the call: the token if accepted, else the higher fence that refused it. */
  fence: bigint;
}

export interface FenceStore {
  /**
   * Atomically: if `token >= fence(resource)` (or there is no fence yet), set the fence to
   * `token` and accept; otherwise leave it and refuse. Equal tokens pass, because one lock
   * holder writes many times with the same token.
   */
  raise(resource: string, token: bigint): Promise<RaiseResult>;
  /** The highest token accepted for `resource`, or null when none has been. */
  current(resource: string): Promise<bigint | null>;
}
