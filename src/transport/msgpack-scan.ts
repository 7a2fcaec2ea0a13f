// A structural check of a msgpack document that runs before msgpackr decodes it. It walks the
// bytes with an explicit stack (no recursion, no allocation per value), so hostile input
// cannot overflow the stack, make the decoder allocate for counts the bytes cannot hold, or
// smuggle in extension types (dates, records, typed arrays...) that the wire format does not
// allow. What passes decodes to plain data: maps with string keys, arrays, strings, numbers,
// booleans, nil and binary.

export interface ScanLimits {
  /** Most levels of maps/arrays nested in one another (a flat map is one level). */
  readonly maxDepth: number;
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
