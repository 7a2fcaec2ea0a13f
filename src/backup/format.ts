// The backup file (`palisade snapshot save`): the lock machine's snapshot at one applied
// index of one cluster, with a header saying whose and which, and a keyed checksum over all
// of it.
//
//   "PALISADE-BACKUP\n"          16 bytes, the magic
//   u32be file format version     BACKUP_FORMAT_VERSION
//   u32be header length H
//   header                        H bytes of JSON (BackupHeader)
//   body                          header.bodyBytes bytes: the lock machine snapshot
//   HMAC-SHA256                   32 bytes, over everything before it, under backupKey(secret)
//
// The header is JSON so that `head -c 300 FILE` tells an operator what a file is; the body is
// the machine's own snapshot encoding (src/lockfsm/snapshot.ts), versioned on its own.
//
// Why keyed: a restore trusts the file. Its createdAt sets the default token floor (an older
// createdAt, a higher floor; a later one, a floor below tokens the old cluster granted), and
// its body becomes the new cluster's state. With an unkeyed checksum anyone who could write
// the file could change either and recompute it (version 1 was; it is no longer restored).
// The key is derived from the cluster secret, which only the nodes and their operators hold:
// the node that answers `save` writes the whole file and its MAC; a restore checks it against
// the secrets it is given.
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export const BACKUP_MAGIC = 'PALISADE-BACKUP\n';
export const BACKUP_FORMAT_VERSION = 2;
/** The format before backups were keyed: its last 32 bytes are a plain SHA-256. */
export const UNKEYED_FORMAT_VERSION = 1;

/** The HKDF label of backup keys: a key for backups, and for nothing else the secret keys. */
const KEY_SALT = 'palisade backup';
const KEY_INFO = 'backup file HMAC-SHA256, format 2';

/** The key of a cluster's backups: HKDF-SHA256 of its secret, under a label of its own. */
export function backupKey(secret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', Buffer.from(secret, 'utf8'), KEY_SALT, KEY_INFO, 32));
}
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
  /** Whether the MAC was checked (and matched one of the keys): false when no key was given,
   *  or for a file of the unkeyed format 1 (its checksum proves nothing about who wrote it). */
  readonly verified: boolean;
  readonly version: number;
}

export interface DecodeBackupOptions {
  /** Accept a file of the unkeyed format 1 although keys were given (the operator vouches
   *  that nobody else could have written it): `palisade snapshot restore --trust-unkeyed`. */
  readonly trustUnkeyed?: boolean;
}

/** A file that is not a backup this build can read: the message says what is wrong. */
export class BackupFormatError extends Error {
  override readonly name = 'BackupFormatError';
}

export function encodeBackup(header: Omit<BackupHeader, 'bodyBytes'>, body: Uint8Array, key: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify({ ...header, bodyBytes: body.length }), 'utf8');
  const prefix = Buffer.alloc(PREFIX_BYTES);
  MAGIC_BYTES.copy(prefix, 0);
  prefix.writeUInt32BE(BACKUP_FORMAT_VERSION, MAGIC_BYTES.length);
  prefix.writeUInt32BE(json.length, MAGIC_BYTES.length + 4);
  const content = Buffer.concat([prefix, json, body]);
  return Buffer.concat([content, mac(key, content)]);
}

function mac(key: Uint8Array, content: Uint8Array): Buffer {
  return createHmac('sha256', key).update(content).digest();
}

/**
 * Checks magic, version, lengths and the MAC; throws BackupFormatError naming the problem.
 * `keys` are the candidate keys (backupKey of each secret the file may have been made
 * under: a cluster's secret, or every secret of a rotation); the file must match one. With
 * `keys` null the MAC is not checked (`verified` false): for showing a file, never for
 * restoring it.
 */
export function decodeBackup(file: Uint8Array, keys: readonly Uint8Array[] | null, options: DecodeBackupOptions = {}): Backup {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (buf.length < MAGIC_BYTES.length || !buf.subarray(0, MAGIC_BYTES.length).equals(MAGIC_BYTES)) {
    throw new BackupFormatError('not a Palisade backup (it does not start with "PALISADE-BACKUP")');
  }
  if (buf.length < PREFIX_BYTES) throw new BackupFormatError(`truncated: ${buf.length} bytes, shorter than the fixed header`);
  const version = buf.readUInt32BE(MAGIC_BYTES.length);
  if (version === UNKEYED_FORMAT_VERSION && keys !== null && options.trustUnkeyed !== true) {
    throw new BackupFormatError(
      'backup file format version 1: its checksum is unkeyed, so whoever could write the file could have changed it unnoticed; ' +
        `take a new backup (version ${BACKUP_FORMAT_VERSION} is keyed with the cluster secret), or pass --trust-unkeyed if nobody but you could have written this file`,
    );
  }
  if (version !== BACKUP_FORMAT_VERSION && version !== UNKEYED_FORMAT_VERSION) {
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
  const body = new Uint8Array(buf.subarray(PREFIX_BYTES + headerBytes, contentEnd));
  if (version === UNKEYED_FORMAT_VERSION) {
    const digest = createHash('sha256').update(buf.subarray(0, contentEnd)).digest();
    if (!digest.equals(buf.subarray(contentEnd))) throw new BackupFormatError('corrupt: the SHA-256 checksum does not match the contents');
    return { header, body, verified: false, version };
  }
  if (keys !== null) {
    if (keys.length === 0) throw new BackupFormatError('no key to check the file with (the cluster secret is needed)');
    const content = buf.subarray(0, contentEnd);
    const found = buf.subarray(contentEnd);
    // Every key is tried whatever matches: the time taken says nothing about which one did.
    let matched = false;
    for (const key of keys) matched = timingSafeEqual(mac(key, content), found) || matched;
    if (!matched) {
      throw new BackupFormatError(
        'the HMAC does not match the contents under the cluster secret: the file was changed after it was written, or it was made by a cluster with another secret',
      );
    }
  }
  return { header, body, verified: keys !== null, version };
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
