import type { FenceStore, RaiseResult } from './store.js';

/**
 * A FenceStore in process memory. Raise is atomic because it runs without an await between
 * the read and the write. It forgets everything when the process exits and keeps one entry
 * per resource ever fenced, so it suits a single process guarding its own resources, tests
 * and demos; a resource that outlives its process needs a durable store.
 */
export class MemoryFenceStore implements FenceStore {
  readonly #fences = new Map<string, bigint>();

  async raise(resource: string, token: bigint): Promise<RaiseResult> {
    const fence = this.#fences.get(resource);
    if (fence !== undefined && token < fence) return { accepted: false, fence };
    this.#fences.set(resource, token);
    return { accepted: true, fence: token };
  }

  async current(resource: string): Promise<bigint | null> {
    return this.#fences.get(resource) ?? null;
  }
}
