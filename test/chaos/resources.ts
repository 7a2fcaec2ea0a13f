// The fenced resources the workload protects: one FencedRegister per lock (and per
// election), living in the harness so that a paused client's write really arrives late.
import { FencedRegister, StaleTokenError } from '../../src/fence/index.js';
import type { FencedWriteResult } from './protocol.js';

export class FencedResources {
  private readonly registers = new Map<string, FencedRegister<string>>();
  /** Writes refused for a stale token, per resource. */
  readonly rejected = new Map<string, number>();
  accepted = 0;

  /** Applies one write at once: the check and the write are one synchronous step. */
  write(resource: string, token: number, value: string): FencedWriteResult {
    let register = this.registers.get(resource);
    if (register === undefined) {
      register = new FencedRegister<string>('', resource);
      this.registers.set(resource, register);
    }
    try {
      register.write(token, value);
      this.accepted++;
      return { rejected: false };
    } catch (e) {
      if (!(e instanceof StaleTokenError)) throw e;
      this.rejected.set(resource, (this.rejected.get(resource) ?? 0) + 1);
      return { rejected: true, fence: Number(e.fence) };
    }
  }

  get rejectedTotal(): number {
    let n = 0;
    for (const c of this.rejected.values()) n += c;
    return n;
  }
}
