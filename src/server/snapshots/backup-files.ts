// `palisade snapshot save`, the node's side: the backup file (src/backup/format.ts) of the
// lock machine's state at a linearizable point, written and keyed here (the key comes from
// the cluster secret, which a client never holds), and read by the client a chunk at a time.
//
// Why chunks: a state at its limits (64 MiB of values, a full ledger) makes a file far larger
// than one frame a client should take, or than the node should queue for one client (it was
// answered in one frame, over maxBufferedBytes: the node cut the connection and `save`
// failed). Each chunk is one answer of at most CHUNK_BYTES, asked for once the previous one
// arrived, so neither side holds more than the file (the node) or a chunk (the client).
// The file stays on the node while it is read: until its last chunk is served, or
// IDLE_MS after the last read, and at most MAX_HELD files at once.
import { randomBytes } from 'node:crypto';
import type { LockMachine } from '../../lockfsm/index.js';
import { SNAPSHOT_FORMAT, SNAPSHOT_VERSION } from '../../lockfsm/index.js';
import type { Request } from '../../protocol/client-protocol.js';
import { answer, type Answer } from '../../protocol/ops.js';
import { backupKey, encodeBackup } from '../../backup/format.js';
import { fail } from '../api/wire.js';

/** Files held at once per node; a save beyond it is LIMIT_EXCEEDED (it is an admin op). */
export const MAX_HELD = 2;
/** A file not read for this long is dropped. */
export const IDLE_MS = 30_000;
/** Rows of the machine's snapshot encoded per event-loop turn (as the node's own snapshots). */
const ROWS_PER_TURN = 5_000;

export interface BackupFilesOptions {
  readonly node: string;
  readonly clusterId: string;
  /** The cluster secret a file is keyed with now (the first of the config's, which a
   *  reload may change). */
  secret(): string;
  /** What the node queues for one client at most (limits.maxBufferedBytes): a chunk is a
   *  small part of it. */
  readonly maxBufferedBytes: number;
  linearizable(): Promise<void>;
  machine(): LockMachine;
  readonly raft: { readonly term: number };
}

interface Held {
  readonly file: Buffer;
  readonly meta: { readonly clusterId: string; readonly node: string; readonly index: number; readonly term: number };
  timer: NodeJS.Timeout;
}

type SnapshotRequest = Extract<Request, { op: 'snapshot' }>;

export class BackupFiles {
  private readonly held = new Map<string, Held>();
  /** Saves being written (counted against MAX_HELD before they exist). */
  private writing = 0;

  private readonly chunkBytes: number;

  constructor(private readonly o: BackupFilesOptions) {
    this.chunkBytes = Math.min(1 << 20, Math.floor(o.maxBufferedBytes / 4));
  }

  /** `snapshot` with `backup`: a new file's first chunk, or (backupId, offset) a later one. */
  async serve(req: SnapshotRequest): Promise<Answer<'snapshot'>> {
    if (req.backupId === undefined) return this.start();
    const h = this.held.get(req.backupId);
    if (!h) {
      return fail('INVALID_ARGUMENT', `no backup ${req.backupId.slice(0, 64)} on this node: a backup is dropped when it has been read to its end, ${IDLE_MS / 1000} s after its last read, or when the node restarts; save again`);
    }
    const offset = req.offset ?? 0;
    if (offset > h.file.length) return fail('INVALID_ARGUMENT', `offset ${offset} is past the end of backup ${req.backupId} (${h.file.length} bytes)`);
    return this.chunk(req.backupId, h, offset);
  }

  /** Drop every file (the node is stopping). */
  stop(): void {
    for (const h of this.held.values()) clearTimeout(h.timer);
    this.held.clear();
  }

  private async start(): Promise<Answer<'snapshot'>> {
    if (this.held.size + this.writing >= MAX_HELD) {
      return fail('LIMIT_EXCEEDED', `${MAX_HELD} backups are being read from this node; retry when one has been read (or at most ${IDLE_MS / 1000} s)`);
    }
    this.writing++;
    try {
      await this.o.linearizable();
      // Read after the barrier (a snapshot installed meanwhile replaces the machine), copied
      // in this turn and encoded over the next ones: the state at exactly this index.
      const m = this.o.machine();
      const index = m.appliedIndex;
      const term = this.o.raft.term;
      const encoder = m.snapshotEncoder();
      while (!encoder.step(ROWS_PER_TURN)) await new Promise<void>((resolve) => setImmediate(resolve));
      const meta = { clusterId: this.o.clusterId, node: this.o.node, index, term };
      const header = { ...meta, createdAt: new Date().toISOString(), machineFormat: SNAPSHOT_FORMAT, machineVersion: SNAPSHOT_VERSION };
      const file = encodeBackup(header, encoder.bytes(), backupKey(this.o.secret()));
      const id = randomBytes(12).toString('hex');
      const h: Held = { file, meta, timer: this.expiry(id) };
      this.held.set(id, h);
      return this.chunk(id, h, 0);
    } finally {
      this.writing--;
    }
  }

  private chunk(id: string, h: Held, offset: number): Answer<'snapshot'> {
    const data = h.file.subarray(offset, offset + this.chunkBytes);
    clearTimeout(h.timer);
    if (offset + data.length >= h.file.length) this.held.delete(id);
    else h.timer = this.expiry(id);
    return answer('snapshot', { backupId: id, ...h.meta, bytes: h.file.length, offset, data });
  }

  private expiry(id: string): NodeJS.Timeout {
    const t = setTimeout(() => this.held.delete(id), IDLE_MS);
    t.unref();
    return t;
  }
}
