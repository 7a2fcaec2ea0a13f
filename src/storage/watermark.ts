// The durable watermark: how far this node's log reached and which term (and vote) it had,
// kept in a small file beside the LevelDB files, so that a log that loses its tail (a
// truncated .log after a power cut, a damaged file, a restored image) cannot take the
// evidence along. At start the log must reach the watermark; otherwise the node holds fewer
// entries than it may have acknowledged, and voting or serving on that log could undo a
// commit (a quorum that counted its acknowledgement may now elect a leader without the entry).
//
// The file has two 32-byte slots written alternately, each with a sequence number and a
// CRC-32, so a torn write leaves the other slot intact: the valid slot with the higher
// sequence is the watermark.
//
//   slot: "PWM1" | u32 seq | f64 lastIndex | f64 term | u8 voted | 3 pad | u32 crc32(0..28)
import { close, constants, fdatasync, open as openFd, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

export const WATERMARK_FILE = 'palisade-watermark';

const SLOT = 32;
const MAGIC = 0x50574d31; // "PWM1"

export interface Watermark {
  /** The last index of the durable log (entries or snapshot). */
  readonly lastIndex: number;
  /** The durable current term, and whether a vote was cast in it. */
  readonly term: number;
  readonly voted: boolean;
}

export type WatermarkRead = { kind: 'missing' } | { kind: 'corrupt' } | { kind: 'ok'; mark: Watermark; seq: number };

export function watermarkPath(dir: string): string {
  return join(dir, WATERMARK_FILE);
}

/** Read the watermark without changing anything on disk. */
export async function readWatermark(dir: string): Promise<WatermarkRead> {
  let fh: FileHandle;
  try {
    fh = await open(watermarkPath(dir), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  try {
    const buf = Buffer.alloc(2 * SLOT);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    let best: { mark: Watermark; seq: number } | null = null;
    for (let s = 0; s < 2; s++) {
      if (bytesRead < (s + 1) * SLOT) continue;
      const slot = decodeSlot(buf.subarray(s * SLOT, (s + 1) * SLOT));
      if (slot && (!best || slot.seq > best.seq)) best = slot;
    }
    return best ? { kind: 'ok', ...best } : { kind: 'corrupt' };
  } finally {
    await fh.close();
  }
}

function decodeSlot(b: Buffer): { mark: Watermark; seq: number } | null {
  if (b.readUInt32BE(0) !== MAGIC) return null;
  if (b.readUInt32BE(28) !== crc32(b.subarray(0, 28))) return null;
  const lastIndex = b.readDoubleBE(8);
  const term = b.readDoubleBE(16);
  if (!Number.isSafeInteger(lastIndex) || lastIndex < 0 || !Number.isSafeInteger(term) || term < 0) return null;
  return { seq: b.readUInt32BE(4), mark: { lastIndex, term, voted: b[24] === 1 } };
}

function encodeSlot(mark: Watermark, seq: number): Buffer {
  const b = Buffer.alloc(SLOT);
  b.writeUInt32BE(MAGIC, 0);
  b.writeUInt32BE(seq >>> 0, 4);
  b.writeDoubleBE(mark.lastIndex, 8);
  b.writeDoubleBE(mark.term, 16);
  b[24] = mark.voted ? 1 : 0;
  b.writeUInt32BE(crc32(b.subarray(0, 28)), 28);
  return b;
}

/**
 * How a watermark write must be durable before it resolves.
 *  - `now`: written and fdatasync'd. For a mark that lowers the index (it must be on disk
 *    before LevelDB shortens the log, or a power cut could leave it claiming more than
 *    LevelDB holds) and for a term or vote change (rare; cheap to make exact).
 *  - `soon`: written into the page cache at once, fdatasync'd within FLUSH_MS off the
 *    commit path. For the mark raised after each appending batch: see "The watermark" in
 *    docs/internals.md for what this gives up (a power cut inside the flush window that
 *    also truncates LevelDB's synced tail goes undetected) and what it buys (a second
 *    device flush per commit, which had cost 35-40 % of one-client throughput on this disk).
 */
export type MarkDurability = 'now' | 'soon';

/** At most this long between a `soon` mark and its fdatasync. */
export const FLUSH_MS = 50;

/**
 * The open watermark file: each write goes to the slot the last valid one is not in.
 *
 * Writes are ordinary pwrites: once one resolves the slot is in the kernel's page cache,
 * which survives the death of this process (kill -9, a crash, OOM) though not of the
 * machine. Durability against a power cut comes from fdatasync: at once for `now` marks,
 * within FLUSH_MS for `soon` ones, and on close.
 */
export class WatermarkFile {
  private dirty = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  /** A failed background flush: every later write fails with it (the node must restart). */
  private flushError: unknown = null;

  private constructor(
    private readonly fd: number,
    private seq: number,
    private current: Watermark,
  ) {}

  /** Open (creating when asked) for writing, continuing after the sequence read before. */
  static async open(dir: string, initial: Watermark, seq: number | null): Promise<WatermarkFile> {
    const path = watermarkPath(dir);
    const flags = constants.O_RDWR | (seq === null ? constants.O_CREAT | constants.O_TRUNC : 0);
    const fd = await new Promise<number>((resolve, reject) => openFd(path, flags, 0o600, (err, fd) => (err ? reject(err) : resolve(fd))));
    const file = new WatermarkFile(fd, seq ?? 0, initial);
    if (seq === null) {
      // A new file: write both slots so that neither reads as corruption later.
      file.put(encodeSlot(initial, 0), 0);
      file.put(encodeSlot(initial, 1), SLOT);
      file.seq = 1;
      await file.sync();
    }
    return file;
  }

  get mark(): Watermark {
    return this.current;
  }

  /** Write `mark`; resolves once it is in the page cache and, for `now`, on disk. */
  async write(mark: Watermark, durability: MarkDurability): Promise<void> {
    if (this.flushError !== null) throw this.flushError;
    const seq = this.seq + 1;
    this.put(encodeSlot(mark, seq), (seq % 2) * SLOT);
    this.seq = seq;
    this.current = mark;
    if (durability === 'now') {
      await this.sync();
    } else {
      this.dirty = true;
      if (this.flushTimer === null) {
        this.flushTimer = setTimeout(() => {
          this.flushTimer = null;
          this.sync().catch((err: unknown) => {
            this.flushError = err;
          });
        }, FLUSH_MS);
        // Not a reason to keep a process alive: the write is in the page cache already.
        this.flushTimer.unref();
      }
    }
  }

  async close(): Promise<void> {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    try {
      if (this.dirty || this.flushing !== null) await this.sync();
    } finally {
      await new Promise<void>((resolve, reject) => close(this.fd, (err) => (err ? reject(err) : resolve())));
    }
  }

  /** fdatasync whatever was written before this call; one at a time. */
  private async sync(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    this.dirty = false;
    this.flushing = new Promise<void>((resolve, reject) => fdatasync(this.fd, (e) => (e ? reject(e) : resolve())));
    try {
      await this.flushing;
    } catch (err) {
      this.dirty = true;
      throw err;
    } finally {
      this.flushing = null;
    }
  }

  /**
   * One slot, in the page cache when this returns. Synchronous on purpose: a 32-byte pwrite
   * into the page cache takes microseconds, while handing it to the thread pool put a
   * round trip (two thread wake-ups and a loop turn) on every appending save, which is on
   * every acknowledgement's path (docs/benchmarks.md, "The watermark off the thread pool").
   * It can wait on the disk only where the device demands stable pages under writeback
   * (queue/stable_writes), and then for one flush at most.
   */
  private put(slot: Buffer, position: number): void {
    const written = writeSync(this.fd, slot, 0, SLOT, position);
    if (written !== SLOT) throw new Error(`short write of the watermark (${written} of ${SLOT} bytes)`);
  }
}

export function sameMark(a: Watermark, b: Watermark): boolean {
  return a.lastIndex === b.lastIndex && a.term === b.term && a.voted === b.voted;
}
