// A node's storage in memory (the NodeStore contract, src/storage/node-store.ts), for
// in-process clusters and the whole-node simulator. What is durable lives in a MemoryDisk,
// which outlives the store: a node "restarted" opens a new store on the same disk and loads
// exactly what was durable. A write is durable when its save() settles; one still in flight
// when the node crashes is lost whole (a LevelDB batch is atomic), which is the torn write a
// crash can leave. The disk can be made slow (each save waits on the node's clock) or full
// (saves fail, as ENOSPC does), and can be wiped or cut short to model lost data.
import type { ReadyWrite } from '../raft/ready-plan.js';
import type { Entry, HardState, Snapshot } from '../raft/types.js';
import type { NodeStore } from '../storage/node-store.js';
import type { LoadedState, StorageStats } from '../storage/raft-storage.js';
import { StorageError } from '../storage/errors.js';
import type { NodeClock } from '../server/clock.js';

/** The durable part, shared by every incarnation of one node. */
export class MemoryDisk {
  hardState: HardState = { term: 0, vote: null, commit: 0 };
  snapshot: Snapshot | undefined;
  readonly entries = new Map<number, Entry>();
  storageId: string | null = null;
  joining = false;
  readonly peers = new Map<string, string>();
  /** Each save waits this long on the node's clock before it is durable (an fsync). */
  latencyMs: () => number = () => 0;
  /** Saves fail with this error (ENOSPC, EIO ...) while set. */
  failure: Error | null = null;
  /** Incremented by a crash: writes of an earlier incarnation still in flight are dropped. */
  epoch = 0;

  constructor(readonly name: string) {}

  /** The node crashed: whatever it had in flight never reaches the disk. */
  crash(): void {
    this.epoch++;
  }

  /** The data directory is lost (a new disk, a wiped directory). */
  wipe(): void {
    this.crash();
    this.hardState = { term: 0, vote: null, commit: 0 };
    this.snapshot = undefined;
    this.entries.clear();
    this.storageId = null;
    this.joining = false;
    this.peers.clear();
  }
}

let storeIds = 0;

export class MemoryStore implements NodeStore {
  onFsync: ((ms: number) => void) | null = null;
  readonly storageId: string;
  private readonly epoch: number;
  private failed: unknown = null;
  private closed = false;
  private tail: Promise<void> = Promise.resolve();
  private fsyncs = 0;
  private bytesWritten = 0;
  private lastFsyncMs = 0;
  private readonly isNew: boolean;

  /** `idSource` draws a new storage id (the simulator passes its seeded one). */
  constructor(
    private readonly disk: MemoryDisk,
    private readonly clock: NodeClock,
    idSource: () => string = () => `mem-${disk.name}-${++storeIds}`,
  ) {
    this.isNew = disk.storageId === null;
    disk.storageId ??= idSource();
    this.storageId = disk.storageId;
    this.epoch = disk.epoch;
  }

  async load(): Promise<LoadedState> {
    this.usable();
    const first = (this.disk.snapshot?.meta.index ?? 0) + 1;
    const entries: Entry[] = [];
    for (let i = first; this.disk.entries.has(i); i++) entries.push(this.disk.entries.get(i)!);
    return { hardState: { ...this.disk.hardState }, ...(this.disk.snapshot ? { snapshot: this.disk.snapshot } : {}), entries, isNew: this.isNew };
  }

  save(w: ReadyWrite): Promise<void> {
    return this.enqueue(() => {
      // A snapshot from the leader replaces the whole log (as RaftStorage does).
      if (w.snapshot) {
        this.disk.snapshot = w.snapshot;
        this.disk.entries.clear();
      }
      if (w.hardState) this.disk.hardState = { ...w.hardState };
      if (w.entries.length > 0) {
        // Appending at index i replaces everything from i on (a new leader's log).
        const from = w.entries[0]!.index;
        for (const i of [...this.disk.entries.keys()]) if (i >= from) this.disk.entries.delete(i);
        for (const e of w.entries) this.disk.entries.set(e.index, e);
      }
      return w.entries.reduce((n, e) => n + e.data.length + 24, 16 + (w.snapshot?.data.length ?? 0));
    });
  }

  saveSnapshot(s: Snapshot): Promise<void> {
    return this.enqueue(() => {
      this.disk.snapshot = s;
      return s.data.length;
    });
  }

  compact(upTo: number): Promise<void> {
    return this.enqueue(() => {
      for (const i of [...this.disk.entries.keys()]) if (i <= upTo) this.disk.entries.delete(i);
      return 0;
    });
  }

  markJoining(): Promise<void> {
    return this.enqueue(() => ((this.disk.joining = true), 1));
  }

  async isJoining(): Promise<boolean> {
    return this.disk.joining;
  }

  async peerStorageIds(): Promise<Map<string, string>> {
    return new Map(this.disk.peers);
  }

  recordPeerStorageId(peer: string, storageId: string): Promise<void> {
    return this.enqueue(() => (this.disk.peers.set(peer, storageId), storageId.length));
  }

  forgetPeerStorageId(peer: string): Promise<void> {
    return this.enqueue(() => (this.disk.peers.delete(peer), 1));
  }

  stats(): StorageStats {
    return { fsyncs: this.fsyncs, bytesWritten: this.bytesWritten, lastFsyncMs: this.lastFsyncMs };
  }

  async close(): Promise<void> {
    await this.tail.catch(() => {});
    this.closed = true;
  }

  private usable(): void {
    if (this.closed) throw new StorageError(this.disk.name, 'the store is closed');
    if (this.failed) throw new StorageError(this.disk.name, `a write failed earlier (${String(this.failed)}); nothing more is written`);
  }

  /** Writes run one after another, each durable after the disk's latency; a write of a crashed
   *  incarnation never lands. */
  private enqueue(write: () => number): Promise<void> {
    this.usable();
    const run = async (): Promise<void> => {
      const started = this.clock.now();
      const ms = this.disk.latencyMs();
      if (ms > 0) await new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
      if (this.disk.epoch !== this.epoch) throw new StorageError(this.disk.name, 'the node crashed before this write was durable');
      if (this.closed) throw new StorageError(this.disk.name, 'the store is closed');
      if (this.disk.failure) {
        this.failed = this.disk.failure;
        throw new StorageError(this.disk.name, `cannot write: ${this.disk.failure.message}`, { cause: this.disk.failure });
      }
      this.bytesWritten += write();
      this.fsyncs++;
      this.lastFsyncMs = this.clock.now() - started;
      this.onFsync?.(this.lastFsyncMs);
    };
    const p = this.tail.then(run);
    this.tail = p.catch(() => {});
    return p;
  }
}
