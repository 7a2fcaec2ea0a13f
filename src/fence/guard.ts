import { StaleTokenError } from './errors.js';
import { checkResource, toToken, type TokenInput } from './input.js';
import { MemoryFenceStore } from './memory-store.js';
import type { FenceStore } from './store.js';

/**
 * What a protected resource consults before it acts for a lock holder: it remembers, per
 * resource, the highest fencing token it has accepted and refuses any lower one.
 */
export class FenceGuard {
  readonly store: FenceStore;

  constructor(store: FenceStore = new MemoryFenceStore()) {
    this.store = store;
  }

  /**
   * Accepts `token` for `resource` if it is not lower than any token accepted before (equal
   * passes: one holder acts many times), and records it as the new fence; otherwise rejects
   * with StaleTokenError. Rejects with FenceInputError for a token that is not a
   * non-negative 64-bit integer or a bad resource name.
   *
   * A check does NOT protect a separate write. Between this call and the write it was meant
   * to guard, another holder can come and go: A checks token 33 (ok), B checks 34 (ok) and
   * writes, then A, which had been paused, writes last and overwrites B. The check and the
   * write must be one atomic step in the resource itself; use a write-shaped API for that
   * (PostgresFence.write, FencedRegister.write, a conditional UPDATE on a version column, a
   * conditional PUT). Use check alone where the action is the check itself, or where the
   * resource applies requests one at a time behind it.
   */
  async check(resource: string, token: TokenInput): Promise<void> {
    const name = checkResource(resource);
    const t = toToken(token);
    const { accepted, fence } = await this.store.raise(name, t);
    if (!accepted) throw new StaleTokenError(name, t, fence);
  }

  /** The highest token accepted for `resource`, or null when none has been. */
  async current(resource: string): Promise<bigint | null> {
    return this.store.current(checkResource(resource));
  }
}
