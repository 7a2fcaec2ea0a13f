// ReadIndex (Raft thesis §6.4): a leader serves a linearizable read at its commit index once
// a heartbeat round started after the read arrived has been acknowledged by a majority,
// which proves no newer leader existed when the read was received.
import type { NodeId } from './types.js';

export interface PendingRead {
  readonly key: string;
  readonly index: number;
  readonly context: Uint8Array;
  /** Who asked: this node, or a follower that forwarded the read. */
  readonly from: NodeId;
  readonly acks: Set<NodeId>;
}

export function contextKey(ctx: Uint8Array): string {
  let s = '';
  for (let i = 0; i < ctx.length; i++) s += ctx[i]!.toString(16).padStart(2, '0');
  return s;
}

export class ReadOnlyQueue {
  private readonly queue: PendingRead[] = [];
  private readonly byKey = new Map<string, PendingRead>();

  add(index: number, context: Uint8Array, from: NodeId, self: NodeId): void {
    const key = contextKey(context);
    if (this.byKey.has(key)) return; // a retried read with the same context is already pending
    const r: PendingRead = { key, index, context, from, acks: new Set([self]) };
    this.queue.push(r);
    this.byKey.set(key, r);
  }

  /** Record a heartbeat acknowledgement; returns the acks now known for that read. */
  ack(context: Uint8Array, from: NodeId): Set<NodeId> | undefined {
    const r = this.byKey.get(contextKey(context));
    if (!r) return undefined;
    r.acks.add(from);
    return r.acks;
  }

  /** Release the read with this context and every read queued before it (their heartbeat
   *  rounds started earlier, so the same acknowledgements confirm them too). */
  releaseThrough(context: Uint8Array): PendingRead[] {
    const key = contextKey(context);
    const at = this.queue.findIndex((r) => r.key === key);
    if (at < 0) return [];
    const out = this.queue.splice(0, at + 1);
    for (const r of out) this.byKey.delete(r.key);
    return out;
  }

  lastContext(): Uint8Array | undefined {
    return this.queue.length ? this.queue[this.queue.length - 1]!.context : undefined;
  }

  drain(): PendingRead[] {
    const out = this.queue.splice(0);
    this.byKey.clear();
    return out;
  }

  get size(): number {
    return this.queue.length;
  }
}
