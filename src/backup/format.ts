// The backup file (`palisade snapshot save`): the lock machine's snapshot at one applied
// index of one cluster, with a header saying whose and which, and a checksum over all of it.
//
//   "PALISADE-BACKUP\n"          16 bytes, the magic
//   u32be file format version     BACKUP_FORMAT_VERSION
//   u32be header length H
//   header                        H bytes of JSON (BackupHeader)
//   body                          header.bodyBytes bytes: the lock machine snapshot
//   sha256                        32 bytes, over everything before it
//
// The header is JSON so that `head -c 300 FILE` tells an operator what a file is; the body is
// the machine's own snapshot encoding (src/lockfsm/snapshot.ts), versioned on its own.
import { createHash } from 'node:crypto';

export const BACKUP_MAGIC = 'PALISADE-BACKUP\n';
export const BACKUP_FORMAT_VERSION = 1;
const MAGIC_BYTES = Buffer.from(BACKUP_MAGIC, 'latin1');
const PREFIX_BYTES = MAGIC_BYTES.length + 8;
const DIGEST_BYTES = 32;
/** Far above any real header; bounds what a damaged length field can make us read. */
const MAX_HEADER_BYTES = 64 * 1024;

export interface BackupHeader {
  /** The cluster the state was read from. */
  readonly clusterId: string;
  /** The lock machine's applied index: every token the state holds is at most this. */
  readonly index: number;
  /** The term of the node that served the read, when it did. */
  readonly term: number;
  /** When the state was read (ISO 8601, the saving machine's clock). */
  readonly createdAt: string;
  /** The node that served the read. */
  readonly node: string;
  /** The machine snapshot's own format and version (lockfsm SNAPSHOT_FORMAT/VERSION). */
  readonly machineFormat: string;
  readonly machineVersion: number;
  readonly bodyBytes: number;
}

export interface Backup {
  readonly header: BackupHeader;
  /** The lock machine snapshot (LockMachine.restore reads it). */
  readonly body: Uint8Array;
}

/** A file that is not a backup this build can read: the message says what is wrong. */
export class BackupFormatError extends Error {
  override readonly name = 'BackupFormatError';
}

export function encodeBackup(header: Omit<BackupHeader, 'bodyBytes'>, body: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify({ ...header, bodyBytes: body.length }), 'utf8');
  const prefix = Buffer.alloc(PREFIX_BYTES);
  MAGIC_BYTES.copy(prefix, 0);
  prefix.writeUInt32BE(BACKUP_FORMAT_VERSION, MAGIC_BYTES.length);
  prefix.writeUInt32BE(json.length, MAGIC_BYTES.length + 4);
  const content = Buffer.concat([prefix, json, body]);
  return Buffer.concat([content, createHash('sha256').update(content).digest()]);
}

/** Checks magic, version, lengths and checksum; throws BackupFormatError naming the problem. */
export function decodeBackup(file: Uint8Array): Backup {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (buf.length < MAGIC_BYTES.length || !buf.subarray(0, MAGIC_BYTES.length).equals(MAGIC_BYTES)) {
    throw new BackupFormatError('not a Palisade backup (it does not start with "PALISADE-BACKUP")');
  }
  if (buf.length < PREFIX_BYTES) throw new BackupFormatError(`truncated: ${buf.length} bytes, shorter than the fixed header`);
  const version = buf.readUInt32BE(MAGIC_BYTES.length);
  if (version !== BACKUP_FORMAT_VERSION) {
    throw new BackupFormatError(`backup file format version ${version}; this build reads version ${BACKUP_FORMAT_VERSION}`);
  }
  const headerBytes = buf.readUInt32BE(MAGIC_BYTES.length + 4);
  if (headerBytes > MAX_HEADER_BYTES) throw new BackupFormatError(`corrupt: header length ${headerBytes} is implausible`);
  if (buf.length < PREFIX_BYTES + headerBytes) {
    throw new BackupFormatError(`truncated: ${buf.length} bytes, the header alone needs ${PREFIX_BYTES + headerBytes}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(buf.subarray(PREFIX_BYTES, PREFIX_BYTES + headerBytes).toString('utf8'));
  } catch {
    throw new BackupFormatError('corrupt: the header is not JSON');
  }
  const header = checkHeader(raw);
  const expected = PREFIX_BYTES + headerBytes + header.bodyBytes + DIGEST_BYTES;
  if (buf.length < expected) throw new BackupFormatError(`truncated: ${buf.length} bytes, expected ${expected}`);
  if (buf.length > expected) throw new BackupFormatError(`corrupt: ${buf.length - expected} bytes after the end of the backup`);
  const contentEnd = expected - DIGEST_BYTES;
  const digest = createHash('sha256').update(buf.subarray(0, contentEnd)).digest();
  if (!digest.equals(buf.subarray(contentEnd))) throw new BackupFormatError('corrupt: the SHA-256 checksum does not match the contents');
  return { header, body: new Uint8Array(buf.subarray(PREFIX_BYTES + headerBytes, contentEnd)) };
}

function checkHeader(raw: unknown): BackupHeader {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BackupFormatError('corrupt: the header is not an object');
  const h = raw as Record<string, unknown>;
  const str = (k: string): string => {
    if (typeof h[k] !== 'string') throw new BackupFormatError(`corrupt: header field ${k} is not a string`);
    return h[k] as string;
  };
  const uint = (k: string): number => {
    const v = h[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new BackupFormatError(`corrupt: header field ${k} is not a whole number`);
    return v;
  };
  return {
    clusterId: str('clusterId'),
    index: uint('index'),
    term: uint('term'),
    createdAt: str('createdAt'),
    node: str('node'),
    machineFormat: str('machineFormat'),
    machineVersion: uint('machineVersion'),
    bodyBytes: uint('bodyBytes'),
  };
}
