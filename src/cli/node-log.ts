// The cause of a node's exit, from its log: the supervisor (`palisade cluster`) writes each
// node's output to a file, and the reason a node stopped (a locked data directory, a port in
// use) belongs on the operator's terminal, not only in that file.
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** pino's numeric levels: 50 error, 60 fatal. */
const ERROR_LEVEL = 50;
const TAIL_BYTES = 64 * 1024;

/** The log's size now: what a node started after this writes is read from here. */
export function logOffset(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The last error lines written to `path` since `from`: pino records at error or fatal (their
 * message and error message), and plain text lines (what `palisade serve` prints to stderr
 * before its logger exists). At most `max` lines, newest last.
 */
export function failureLines(path: string, from: number, max = 3): string[] {
  const text = readFrom(path, from);
  const plain: string[] = [];
  const records: string[] = [];
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (s === '') continue;
    const parsed = parseRecord(s);
    if (parsed === null) plain.push(s);
    else if (parsed.level >= ERROR_LEVEL) records.push(parsed.text);
  }
  // `palisade serve` prints its reason for stopping as plain text, after logging the same
  // error as a record: the plain lines are the short form, when there are any.
  return (plain.length > 0 ? plain : records).slice(-max);
}

function parseRecord(s: string): { level: number; text: string } | null {
  if (!s.startsWith('{')) return null;
  try {
    const r = JSON.parse(s) as { level?: unknown; msg?: unknown; err?: { message?: unknown } };
    if (typeof r.level !== 'number') return null;
    const msg = typeof r.msg === 'string' ? r.msg : '';
    const err = typeof r.err?.message === 'string' ? r.err.message : '';
    return { level: r.level, text: err && !msg.includes(err) ? `${msg}: ${err}` : msg || err };
  } catch {
    return null;
  }
}

function readFrom(path: string, from: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(path).size;
    const start = Math.max(from, size - TAIL_BYTES);
    const buf = Buffer.alloc(Math.max(0, size - start));
    readSync(fd, buf, 0, buf.length, start);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}
