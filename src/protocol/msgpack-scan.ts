// A structural check of a msgpack document that runs before msgpackr decodes it. It walks the
// bytes with an explicit stack (no recursion, no allocation per value), so hostile input
// cannot overflow the stack, make the decoder allocate for counts the bytes cannot hold, or
// smuggle in extension types (dates, records, typed arrays...) that the wire format does not
// allow. What passes decodes to plain data: maps with string keys, arrays, strings, numbers,
// booleans, nil and binary.
//
// The bytes must also pay for the objects they become. Without that, every byte of an array
// of empty maps is a JS object of ~50 bytes and a microsecond of decoding: 1 MiB decoded
// before its sender had proven anything stalled a node for seconds. So the values that
// become heap objects (maps, arrays, binaries, and strings other than map keys, which the
// decoder interns) are counted, and a document may hold at most `maxObjects` of them.

export interface ScanLimits {
  /** Most levels of maps/arrays nested in one another (a flat map is one level). */
  readonly maxDepth: number;
  /** Most maps, arrays, binaries and non-key strings in the document. Default unlimited. */
  readonly maxObjects?: number;
}

/** Returns null when `bytes` is exactly one well-formed, extension-free msgpack value,
 *  otherwise what is wrong with it. */
export function scanMsgpack(bytes: Uint8Array, limits: ScanLimits): string | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  let pos = 0;
  // For each open container: values still to read. Maps count keys and values, so an even
  // count left in a map means the next value is a key.
  const left: number[] = [1];
  const isMap: boolean[] = [false];
  const maxObjects = limits.maxObjects ?? Infinity;
  let objects = 0;

  const skip = (n: number): boolean => {
    if (n > end - pos) return false;
    pos += n;
    return true;
  };
  const open = (count: number, map: boolean): string | null => {
    if (left.length > limits.maxDepth) return `nesting deeper than ${limits.maxDepth}`;
    // Every value takes at least one byte: a count the remaining bytes cannot hold is a lie.
    if (count > end - pos) return 'truncated (a count exceeds the remaining bytes)';
    left.push(count);
    isMap.push(map);
    return null;
  };

  while (left.length > 0) {
    const top = left.length - 1;
    if (left[top] === 0) {
      left.pop();
      isMap.pop();
      continue;
    }
    const expectKey = isMap[top]! && left[top]! % 2 === 0;
    left[top]! -= 1;
    if (pos >= end) return 'truncated';
    const t = bytes[pos++]!;
    if (expectKey && !(t >= 0xa0 && t <= 0xbf) && t !== 0xd9 && t !== 0xda && t !== 0xdb) return 'a map key is not a string';
    if (!expectKey && becomesObject(t) && ++objects > maxObjects) return `more than ${maxObjects} maps, arrays, strings and binaries for ${end} bytes`;

    let problem: string | null = null;
    let ok = true;
    if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) {
      // fixint, nil, false, true: nothing more to read
    } else if (t <= 0x8f) {
      problem = open((t & 0x0f) * 2, true);
    } else if (t <= 0x9f) {
      problem = open(t & 0x0f, false);
    } else if (t <= 0xbf) {
      ok = skip(t & 0x1f);
    } else {
      switch (t) {
        case 0xc4: // bin 8
        case 0xd9: // str 8
          ok = pos + 1 <= end && skip(1) && skip(view.getUint8(pos - 1));
          break;
        case 0xc5:
        case 0xda:
          ok = pos + 2 <= end && skip(2) && skip(view.getUint16(pos - 2));
          break;
        case 0xc6:
        case 0xdb:
          ok = pos + 4 <= end && skip(4) && skip(view.getUint32(pos - 4));
          break;
        case 0xca: // float 32
          ok = skip(4);
          break;
        case 0xcb: // float 64
          ok = skip(8);
          break;
        case 0xcc: // uint 8..64, int 8..64
        case 0xd0:
          ok = skip(1);
          break;
        case 0xcd:
        case 0xd1:
          ok = skip(2);
          break;
        case 0xce:
        case 0xd2:
          ok = skip(4);
          break;
        case 0xcf:
        case 0xd3:
          ok = skip(8);
          break;
        case 0xdc: // array 16/32, map 16/32
          ok = pos + 2 <= end;
          if (ok) problem = open(view.getUint16((pos += 2) - 2), false);
          break;
        case 0xdd:
          ok = pos + 4 <= end;
          if (ok) problem = open(view.getUint32((pos += 4) - 4), false);
          break;
        case 0xde:
          ok = pos + 2 <= end;
          if (ok) problem = open(view.getUint16((pos += 2) - 2) * 2, true);
          break;
        case 0xdf:
          ok = pos + 4 <= end;
          if (ok) problem = open(view.getUint32((pos += 4) - 4) * 2, true);
          break;
        case 0xc1:
          return 'byte 0xc1 is never used in msgpack';
        default: // 0xc7-0xc9 ext, 0xd4-0xd8 fixext
          return `extension type (byte 0x${t.toString(16)}) not allowed`;
      }
    }
    if (problem !== null) return problem;
    if (!ok) return 'truncated';
  }
  return pos === end ? null : `${end - pos} trailing bytes after the value`;
}

/** Whether a value starting with byte `t` decodes to a heap object (map, array, string, binary). */
function becomesObject(t: number): boolean {
  return (t >= 0x80 && t <= 0xbf) || t === 0xc4 || t === 0xc5 || t === 0xc6 || (t >= 0xd9 && t <= 0xdf);
}

/**
 * The `id` of a request without decoding it: walks the top-level map, skipping other values
 * without building them (no allocation), and reads `id` when it is a non-negative integer.
 * For frames that are refused unread (too large, rate-limited) but whose sender should still
 * learn which request was refused. Undefined when there is no readable id.
 */
export function peekRequestId(bytes: Uint8Array): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  if (end === 0) return undefined;
  const t = bytes[0]!;
  let pos = 1;
  let entries: number;
  if (t >= 0x80 && t <= 0x8f) entries = t & 0x0f;
  else if (t === 0xde && end >= 3) (entries = view.getUint16(1)), (pos = 3);
  else if (t === 0xdf && end >= 5) (entries = view.getUint32(1)), (pos = 5);
  else return undefined;
  for (let i = 0; i < entries; i++) {
    const key = readString(bytes, view, pos);
    if (!key) return undefined;
    pos = key.next;
    if (key.len === 2 && bytes[key.start] === 0x69 && bytes[key.start + 1] === 0x64) return readUint(bytes, view, pos);
    const next = skipValue(bytes, view, pos);
    if (next < 0) return undefined;
    pos = next;
  }
  return undefined;
}

function readString(bytes: Uint8Array, view: DataView, pos: number): { start: number; len: number; next: number } | null {
  const end = bytes.length;
  if (pos >= end) return null;
  const t = bytes[pos]!;
  let len: number;
  let start: number;
  if (t >= 0xa0 && t <= 0xbf) (len = t & 0x1f), (start = pos + 1);
  else if (t === 0xd9 && pos + 2 <= end) (len = view.getUint8(pos + 1)), (start = pos + 2);
  else if (t === 0xda && pos + 3 <= end) (len = view.getUint16(pos + 1)), (start = pos + 3);
  else if (t === 0xdb && pos + 5 <= end) (len = view.getUint32(pos + 1)), (start = pos + 5);
  else return null;
  return start + len <= end ? { start, len, next: start + len } : null;
}

function readUint(bytes: Uint8Array, view: DataView, pos: number): number | undefined {
  const end = bytes.length;
  if (pos >= end) return undefined;
  const t = bytes[pos]!;
  if (t <= 0x7f) return t;
  const need = t === 0xcc || t === 0xd0 ? 1 : t === 0xcd || t === 0xd1 ? 2 : t === 0xce || t === 0xd2 ? 4 : t === 0xcf || t === 0xd3 ? 8 : t === 0xcb ? 8 : 0;
  if (need === 0 || pos + 1 + need > end) return undefined;
  const at = pos + 1;
  let v: number;
  switch (t) {
    case 0xcc: v = view.getUint8(at); break;
    case 0xcd: v = view.getUint16(at); break;
    case 0xce: v = view.getUint32(at); break;
    case 0xcf: v = Number(view.getBigUint64(at)); break;
    case 0xd0: v = view.getInt8(at); break;
    case 0xd1: v = view.getInt16(at); break;
    case 0xd2: v = view.getInt32(at); break;
    case 0xd3: v = Number(view.getBigInt64(at)); break;
    default: v = view.getFloat64(at); // a float64 that holds an integer, as a JS encoder may write it
  }
  return Number.isSafeInteger(v) && v >= 0 ? v + 0 : undefined;
}

/** The position after the value at `pos`, or -1 when the bytes end first. Iterative. */
function skipValue(bytes: Uint8Array, view: DataView, pos: number): number {
  const end = bytes.length;
  let pending = 1; // values still to skip
  while (pending > 0) {
    if (pos >= end) return -1;
    const t = bytes[pos++]!;
    pending -= 1;
    let size = 0;
    if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) size = 0;
    else if (t <= 0x8f) pending += (t & 0x0f) * 2;
    else if (t <= 0x9f) pending += t & 0x0f;
    else if (t <= 0xbf) size = t & 0x1f;
    else {
      const head = (n: number): number => (pos + n <= end ? (n === 1 ? view.getUint8(pos) : n === 2 ? view.getUint16(pos) : view.getUint32(pos)) : -1);
      let n: number;
      switch (t) {
        case 0xc4: case 0xd9: if ((n = head(1)) < 0) return -1; pos += 1; size = n; break;
        case 0xc5: case 0xda: if ((n = head(2)) < 0) return -1; pos += 2; size = n; break;
        case 0xc6: case 0xdb: if ((n = head(4)) < 0) return -1; pos += 4; size = n; break;
        case 0xca: size = 4; break;
        case 0xcb: size = 8; break;
        case 0xcc: case 0xd0: size = 1; break;
        case 0xcd: case 0xd1: size = 2; break;
        case 0xce: case 0xd2: size = 4; break;
        case 0xcf: case 0xd3: size = 8; break;
        case 0xdc: if ((n = head(2)) < 0) return -1; pos += 2; pending += n; break;
        case 0xdd: if ((n = head(4)) < 0) return -1; pos += 4; pending += n; break;
        case 0xde: if ((n = head(2)) < 0) return -1; pos += 2; pending += n * 2; break;
        case 0xdf: if ((n = head(4)) < 0) return -1; pos += 4; pending += n * 2; break;
        default: return -1; // extensions and 0xc1: not ours to read
      }
    }
    if (size > end - pos) return -1;
    pos += size;
    // A count the remaining bytes cannot hold is a lie: stop before walking it.
    if (pending > end - pos) return -1;
  }
  return pos;
}
