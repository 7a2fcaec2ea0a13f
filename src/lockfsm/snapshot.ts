// The snapshot envelope: format name, version and the applied index around the tables'
// own tuples. Tables serialize themselves as arrays of tuples in their iteration order,
// which keeps the snapshot compact and makes a restored machine iterate (and so emit
// events and encode its next snapshot) exactly as the original does.

import { copyingUnpackr, packToBytes, plainView } from './codec.js';
import { fail, readObject, readUint, SnapshotError } from './snapshot-reader.js';

export const SNAPSHOT_FORMAT = 'palisade.lockfsm';
export const SNAPSHOT_VERSION = 1;

export interface SnapshotBody {
  readonly appliedIndex: number;
  readonly sessions: unknown;
  readonly locks: unknown;
  readonly elections: unknown;
  readonly kv: unknown;
  readonly ledgerRunning: unknown;
  readonly ledgerDone: unknown;
}

const BODY_FIELDS = ['sessions', 'locks', 'elections', 'kv', 'ledgerRunning', 'ledgerDone'] as const;

export function encodeSnapshot(body: SnapshotBody): Uint8Array {
  return packToBytes({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, ...body });
}

/** Checks the envelope; the tables check their own parts. Throws SnapshotError. */
export function decodeSnapshot(data: Uint8Array): SnapshotBody {
  if (!(data instanceof Uint8Array)) fail('data must be bytes');
  if (data.length === 0) fail('empty data');
  let value: unknown;
  try {
    value = copyingUnpackr.unpack(plainView(data));
  } catch (err) {
    throw new SnapshotError(`not valid msgpack (${err instanceof Error ? err.message.slice(0, 120) : 'undecodable'})`);
  }
  const o = readObject(value, 'snapshot');
  if (o.format !== SNAPSHOT_FORMAT) fail(`not a lock state machine snapshot (format ${JSON.stringify(o.format)})`);
  if (o.version !== SNAPSHOT_VERSION) fail(`unsupported version ${JSON.stringify(o.version)} (this build reads ${SNAPSHOT_VERSION})`);
  for (const field of BODY_FIELDS) if (!(field in o)) fail(`missing ${field}`);
  return {
    appliedIndex: readUint(o.appliedIndex, 'appliedIndex'),
    sessions: o.sessions,
    locks: o.locks,
    elections: o.elections,
    kv: o.kv,
    ledgerRunning: o.ledgerRunning,
    ledgerDone: o.ledgerDone,
  };
}
