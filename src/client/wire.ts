// Frame encoding for the client side of the protocol. A small private msgpackr codec and a
// shape check of server frames; it stands in until src/transport/{codec,validate}.ts land,
// and then forwards to them.
import { Packr } from 'msgpackr';
import type { Request, ServerEvent, ServerFrame, WireError } from '../transport/client-protocol.js';

// useRecords:false keeps frames plain msgpack maps that any msgpack library can read.
const packr = new Packr({ useRecords: false });

export function encodeRequest(request: Request): Uint8Array {
  return packr.pack(request);
}

/** The decoded frame, or null when it is not a frame this client understands. */
export function decodeServerFrame(bytes: Uint8Array): ServerFrame | null {
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch {
    return null;
  }
  return parseFrame(value);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isNullableStr = (v: unknown): v is string | null => v === null || typeof v === 'string';
const isNullableInt = (v: unknown): v is number | null => v === null || isInt(v);

function parseFrame(v: unknown): ServerFrame | null {
  if (!isRecord(v)) return null;
  if ('id' in v) {
    if (!isInt(v.id)) return null;
    if (v.ok === true) return { id: v.id, ok: true, result: v.result };
    if (v.ok === false && isRecord(v.error) && isStr(v.error.code) && isStr(v.error.message)) {
      return { id: v.id, ok: false, error: v.error as unknown as WireError };
    }
    return null;
  }
  return parseEvent(v);
}

function parseEvent(v: Record<string, unknown>): ServerEvent | null {
  if (!isInt(v.index)) return null;
  switch (v.event) {
    case 'granted':
      return isInt(v.session) && isStr(v.name) && isInt(v.token) && (v.mode === 'exclusive' || v.mode === 'shared')
        ? (v as unknown as ServerEvent)
        : null;
    case 'released':
      return isInt(v.session) && isStr(v.name) && isInt(v.token) ? (v as unknown as ServerEvent) : null;
    case 'sessionExpired':
      return isInt(v.session) ? (v as unknown as ServerEvent) : null;
    case 'electionChanged':
      return isStr(v.election) && isNullableInt(v.leader) && isNullableStr(v.value) && isNullableInt(v.token)
        ? (v as unknown as ServerEvent)
        : null;
    case 'kvChanged':
      return isStr(v.key) && isInt(v.revision) && (v.value === null || v.value instanceof Uint8Array)
        ? (v as unknown as ServerEvent)
        : null;
    default:
      return null;
  }
}
