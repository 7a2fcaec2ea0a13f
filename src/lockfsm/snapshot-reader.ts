// Checked reading of decoded snapshot data. A snapshot is trusted no more than an entry:
// bad or truncated bytes must stop the node with a clear error, never restore a state that
// differs from the one the other nodes have.

export class SnapshotError extends Error {
  /** The message without the 'lockfsm snapshot:' prefix. */
  readonly detail: string;

  constructor(detail: string) {
    super(`lockfsm snapshot: ${detail}`);
    this.name = 'SnapshotError';
    this.detail = detail;
  }
}

export function fail(message: string): never {
  throw new SnapshotError(message);
}

/**
 * Reads every item of an array with `read`, naming the failing item in the error. The
 * readers below take constant descriptions; the item's name is added only on failure,
 * so a restore of 100k locks builds no message strings.
 */
export function readEach(v: unknown, what: string, read: (item: unknown) => void): void {
  const items = readArray(v, what);
  for (let i = 0; i < items.length; i++) {
    try {
      read(items[i]);
    } catch (err) {
      if (err instanceof SnapshotError) throw new SnapshotError(`${what}[${i}]: ${err.detail}`);
      throw err;
    }
  }
}

export function readArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) fail(`${what} must be an array`);
  return v;
}

export function readTuple(v: unknown, length: number, what: string): unknown[] {
  const a = readArray(v, what);
  if (a.length !== length) fail(`${what} must have ${length} fields, has ${a.length}`);
  return a;
}

export function readUint(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(`${what} must be a non-negative integer`);
  return v === 0 ? 0 : v;
}

/** A log index / id / token: 1 ..= maxIndex (nothing can come from an entry not yet applied). */
export function readIndex(v: unknown, maxIndex: number, what: string): number {
  const n = readUint(v, what);
  if (n < 1 || n > maxIndex) fail(`${what} ${n} is outside [1, ${maxIndex}]`);
  return n;
}

export function readString(v: unknown, what: string): string {
  if (typeof v !== 'string') fail(`${what} must be a string`);
  return v;
}

export function readBytes(v: unknown, what: string): Uint8Array {
  if (!(v instanceof Uint8Array)) fail(`${what} must be bytes`);
  return new Uint8Array(v);
}

export function readObject(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) {
    fail(`${what} must be an object`);
  }
  return v as Record<string, unknown>;
}

export function readNullableIndex(v: unknown, maxIndex: number, what: string): number | null {
  return v === null || v === undefined ? null : readIndex(v, maxIndex, what);
}

export function readNullableUint(v: unknown, what: string): number | null {
  return v === null || v === undefined ? null : readUint(v, what);
}

export function readNullableBytes(v: unknown, what: string): Uint8Array | null {
  return v === null || v === undefined ? null : readBytes(v, what);
}

export function readNullableString(v: unknown, what: string): string | null {
  return v === null ? null : readString(v, what);
}
