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
import { close, constants, fdatasync, open as openFd, write as writeFd } from 'node:fs';
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
 *  - `soon`: written and fdatasync'd within FLUSH_MS, off the commit path; the save that
 *    raised it resolves at once. For the mark raised after each appending batch: see "The
 *    watermark" in docs/internals.md for what this gives up (a log that loses part of its
 *    synced tail within FLUSH_MS of a crash or power cut goes undetected) and what it buys
 *    (no second device flush and no file write per commit).
 */
export type MarkDurability = 'now' | 'soon';

/** At most this long between a `soon` mark and its fdatasync. */
export const FLUSH_MS = 50;

/**
 * The open watermark file: each write goes to the slot the last valid one is not in.
 *
 * `soon` marks are coalesced: only the newest one is written, by a timer, with the
 * fdatasync after it. A mark on disk that lags the log is harmless (the start-up check is
 * that the log reaches the mark, and the first open raises a lagging mark at once); a mark
 * ahead of the log would refuse a sound node, so every file operation runs one after
 * another and a `now` mark supersedes a `soon` one not yet written.
 */
export class WatermarkFile {
  /** A `soon` mark not yet written. */
  private unwritten: Watermark | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  /** The last file operation queued; each waits for the one before (see exclusive). */
  private tail: Promise<void> = Promise.resolve();
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
      await file.put(encodeSlot(initial, 0), 0);
      await file.put(encodeSlot(initial, 1), SLOT);
      file.seq = 1;
      await file.fdatasync();
    }
    return file;
  }

  /** The newest mark asked for (on disk within FLUSH_MS of the request, or at once for `now`). */
  get mark(): Watermark {
    return this.current;
  }

  /** Ask for `mark`; a `now` mark resolves once it is on disk, a `soon` one at once. */
  async write(mark: Watermark, durability: MarkDurability): Promise<void> {
    if (this.flushError !== null) throw this.flushError;
    this.current = mark;
    if (durability === 'soon') {
      this.unwritten = mark;
      this.flushLater();
      return;
    }
    this.unwritten = null; // superseded by this newer mark
    await this.exclusive(() => this.writeAndSync(mark));
  }

  async close(): Promise<void> {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    try {
      await this.flush();
    } finally {
      await new Promise<void>((resolve, reject) => close(this.fd, (err) => (err ? reject(err) : resolve())));
    }
  }

  private flushLater(): void {
    if (this.flushTimer !== null) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      this.flush().catch((err: unknown) => {
        this.flushError ??= err;
      });
    }, FLUSH_MS);
    // Not a reason to keep a process alive: close() flushes.
    this.flushTimer.unref();
  }

  /** Write and fdatasync the `soon` mark not yet written, if any. */
  private flush(): Promise<void> {
    return this.exclusive(async () => {
      const mark = this.unwritten;
      this.unwritten = null;
      if (mark !== null) await this.writeAndSync(mark);
    });
  }

  /** Run `op` after every file operation queued before it. */
  private exclusive(op: () => Promise<void>): Promise<void> {
    const run = this.tail.then(op);
    this.tail = run.catch(() => {});
    return run;
  }

  private async writeAndSync(mark: Watermark): Promise<void> {
    const seq = this.seq + 1;
    await this.put(encodeSlot(mark, seq), (seq % 2) * SLOT);
    this.seq = seq;
    await this.fdatasync();
  }

  private fdatasync(): Promise<void> {
    return new Promise((resolve, reject) => fdatasync(this.fd, (e) => (e ? reject(e) : resolve())));
  }

  /** One slot, in the page cache when this resolves. */
  private put(slot: Buffer, position: number): Promise<void> {
    return new Promise((resolve, reject) => {
      writeFd(this.fd, slot, 0, SLOT, position, (err, written) => {
        if (err) return reject(err);
        if (written !== SLOT) return reject(new Error(`short write of the watermark (${written} of ${SLOT} bytes)`));
        resolve();
      });
    });
  }
}

export function sameMark(a: Watermark, b: Watermark): boolean {
  return a.lastIndex === b.lastIndex && a.term === b.term && a.voted === b.voted;
}
