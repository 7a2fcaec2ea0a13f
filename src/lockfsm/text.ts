// String measures that do not depend on the platform. Names travel as msgpack strings
// (UTF-8), so limits count UTF-8 bytes; a string with a lone surrogate would come back from
// the codec as U+FFFD, i.e. as another name, so such strings are refused outright.

/** UTF-8 byte length of `s`, or -1 when `s` holds a lone surrogate (not valid Unicode). */
export function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (next < 0xdc00 || next > 0xdfff) return -1;
      bytes += 4;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return -1;
    else bytes += 3;
  }
  return bytes;
}

