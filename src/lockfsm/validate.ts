// Full validation of a command's shape and of every bound that does not depend on state.
// Both entry paths go through it: decodeCommand (bytes from the log) and apply (a typed
// object from the server, which may still carry client-supplied garbage at run time).
// It returns a fresh canonical object: only known fields, in a fixed order, no undefined
// values, and copies of byte arrays, so nothing the caller keeps can later change state
// and the same command always encodes to the same bytes.

import type { MachineConfig } from './config.js';
import { invalidArgument, limitExceeded } from './errors.js';
import { utf8Length } from './text.js';
import type { Command, CommandType, MachineError } from './types.js';

type FieldKind =
  | 'id' // positive safe integer: session, seq, token, index
  | 'uint' // non-negative safe integer
  | 'bool'
  | 'mode'
  | 'name' // lock or election name: 1..maxNameLength UTF-8 bytes
  | 'key' // kv key or opKey: 1..maxKeyBytes UTF-8 bytes
  | 'bytes' // Uint8Array of at most maxValueBytes
  | 'text' // string of at most maxValueBytes UTF-8 bytes (may be empty)
  | 'fence'; // {lock: name, token: id}

interface CommandSpec {
  readonly required: Readonly<Record<string, FieldKind>>;
  readonly optional: Readonly<Record<string, FieldKind>>;
}

const SCOPED_REQUIRED = { session: 'id', seq: 'id' } as const;
const SCOPED_OPTIONAL = { ackedSeq: 'uint', fence: 'fence' } as const;

function scoped(
  required: Readonly<Record<string, FieldKind>>,
  optional: Readonly<Record<string, FieldKind>> = {},
): CommandSpec {
  return { required: { ...SCOPED_REQUIRED, ...required }, optional: { ...SCOPED_OPTIONAL, ...optional } };
}

const SPECS: Readonly<Record<CommandType, CommandSpec>> = {
  openSession: { required: { ttlMs: 'uint' }, optional: {} },
  closeSession: scoped({}),
  expireSession: { required: { session: 'id' }, optional: {} },
  acquire: scoped({ name: 'name', mode: 'mode', wait: 'bool' }, { limit: 'id', lockDelayMs: 'uint' }),
  release: scoped({ name: 'name', token: 'id' }),
  cancelWait: scoped({ name: 'name' }),
  lockDelayElapsed: { required: { name: 'name' }, optional: { since: 'id' } },
  campaign: scoped({ election: 'name', value: 'text' }),
  proclaim: scoped({ election: 'name', token: 'id', value: 'text' }),
  resign: scoped({ election: 'name' }, { token: 'id' }),
  put: scoped({ key: 'key', value: 'bytes' }, { ifRevision: 'uint' }),
  delete: scoped({ key: 'key' }, { ifRevision: 'uint' }),
  // the ledger is fenced by definition: fence is required, not optional
  beginOp: { required: { ...SCOPED_REQUIRED, opKey: 'key', fence: 'fence', at: 'uint' }, optional: { ackedSeq: 'uint', retry: 'bool' } },
  completeOp: {
    required: { ...SCOPED_REQUIRED, opKey: 'key', result: 'bytes', fence: 'fence', at: 'uint' },
    optional: { ackedSeq: 'uint' },
  },
  pruneOps: { required: { olderThan: 'uint' }, optional: { abandonedOlderThan: 'uint', max: 'uint' } },
};

export const COMMAND_TYPES: readonly CommandType[] = Object.keys(SPECS) as CommandType[];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A field's checked and canonical value, or the error that refuses the command. */
type Checked = { ok: true; value: unknown } | { ok: false; error: MachineError };

const ok = (value: unknown): Checked => ({ ok: true, value });
const bad = (error: MachineError): Checked => ({ ok: false, error });

function checkName(v: unknown, field: string, config: MachineConfig): Checked {
  if (typeof v !== 'string') return bad(invalidArgument(`${field} must be a string`));
  const len = utf8Length(v);
  if (len < 0) return bad(invalidArgument(`${field} is not valid Unicode (lone surrogate)`));
  if (len === 0) return bad(invalidArgument(`${field} must not be empty`));
  if (len > config.maxNameLength) {
    return bad(invalidArgument(`${field} is ${len} bytes long, over the limit of ${config.maxNameLength}`));
  }
  return ok(v);
}

function checkField(kind: FieldKind, v: unknown, field: string, config: MachineConfig): Checked {
  switch (kind) {
    case 'id':
    case 'uint': {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
        return bad(invalidArgument(`${field} must be a non-negative safe integer`));
      }
      if (kind === 'id' && v === 0) return bad(invalidArgument(`${field} must be at least 1`));
      return ok(v === 0 ? 0 : v); // no -0: it would encode differently from 0
    }
    case 'bool':
      return typeof v === 'boolean' ? ok(v) : bad(invalidArgument(`${field} must be a boolean`));
    case 'mode':
      return v === 'exclusive' || v === 'shared'
        ? ok(v)
        : bad(invalidArgument(`${field} must be 'exclusive' or 'shared'`));
    case 'name':
      return checkName(v, field, config);
    case 'key': {
      if (typeof v !== 'string') return bad(invalidArgument(`${field} must be a string`));
      const len = utf8Length(v);
      if (len < 0) return bad(invalidArgument(`${field} is not valid Unicode (lone surrogate)`));
      if (len === 0) return bad(invalidArgument(`${field} must not be empty`));
      if (len > config.maxKeyBytes) {
        return bad(limitExceeded(`${field} is ${len} bytes long, over the limit of ${config.maxKeyBytes}`));
      }
      return ok(v);
    }
    case 'bytes': {
      if (!(v instanceof Uint8Array)) return bad(invalidArgument(`${field} must be bytes (Uint8Array)`));
      if (v.length > config.maxValueBytes) {
        return bad(limitExceeded(`${field} is ${v.length} bytes, over the limit of ${config.maxValueBytes}`));
      }
      return ok(new Uint8Array(v)); // a plain copy: neither a Buffer nor a view of the entry
    }
    case 'text': {
      if (typeof v !== 'string') return bad(invalidArgument(`${field} must be a string`));
      const len = utf8Length(v);
      if (len < 0) return bad(invalidArgument(`${field} is not valid Unicode (lone surrogate)`));
      if (len > config.maxValueBytes) {
        return bad(limitExceeded(`${field} is ${len} bytes, over the limit of ${config.maxValueBytes}`));
      }
      return ok(v);
    }
    case 'fence': {
      if (!isPlainObject(v)) return bad(invalidArgument(`${field} must be an object {lock, token}`));
      for (const k of Object.keys(v)) {
        if (k !== 'lock' && k !== 'token') return bad(invalidArgument(`${field} has an unknown field '${k}'`));
      }
      const lock = checkName(v.lock, `${field}.lock`, config);
      if (!lock.ok) return lock;
      const token = checkField('id', v.token, `${field}.token`, config);
      if (!token.ok) return token;
      return ok({ lock: lock.value, token: token.value });
    }
  }
}

/**
 * Checks `value` is a well-formed command within the config's bounds; returns a canonical
 * copy, or an INVALID_ARGUMENT / LIMIT_EXCEEDED error. Never throws.
 */
export function validateCommand(value: unknown, config: MachineConfig): Command | MachineError {
  if (!isPlainObject(value)) return invalidArgument('a command must be an object');
  const type = value.type;
  if (typeof type !== 'string' || !Object.hasOwn(SPECS, type)) {
    return invalidArgument(`unknown command type ${typeof type === 'string' ? JSON.stringify(type.slice(0, 40)) : typeof type}`);
  }
  const spec = SPECS[type as CommandType];
  for (const k of Object.keys(value)) {
    if (k !== 'type' && !Object.hasOwn(spec.required, k) && !Object.hasOwn(spec.optional, k)) {
      return invalidArgument(`${type}: unknown field ${JSON.stringify(k.slice(0, 40))}`);
    }
  }
  const out: Record<string, unknown> = { type };
  for (const field of Object.keys(spec.required)) {
    const v = value[field];
    if (v === undefined) return invalidArgument(`${type}: missing field '${field}'`);
    const checked = checkField(spec.required[field]!, v, field, config);
    if (!checked.ok) return checked.error;
    out[field] = checked.value;
  }
  for (const field of Object.keys(spec.optional)) {
    const v = value[field];
    if (v === undefined || Object.hasOwn(spec.required, field)) continue;
    const checked = checkField(spec.optional[field]!, v, field, config);
    if (!checked.ok) return checked.error;
    out[field] = checked.value;
  }
  const crossError = checkAcrossFields(out, config);
  if (crossError) return crossError;
  // The spec above is the single source of these shapes; this is the one place the
  // checked record becomes the typed union.
  return out as unknown as Command;
}

/** Bounds that involve more than one field or the config. */
function checkAcrossFields(cmd: Record<string, unknown>, config: MachineConfig): MachineError | null {
  const num = (k: string): number | undefined => cmd[k] as number | undefined;
  const ackedSeq = num('ackedSeq');
  const seq = num('seq');
  if (ackedSeq !== undefined && seq !== undefined && ackedSeq >= seq) {
    return invalidArgument(`ackedSeq (${ackedSeq}) must be lower than seq (${seq})`);
  }
  switch (cmd.type) {
    case 'openSession': {
      const ttl = num('ttlMs')!;
      if (ttl < config.minTtlMs || ttl > config.maxTtlMs) {
        return invalidArgument(`ttlMs ${ttl} is outside [${config.minTtlMs}, ${config.maxTtlMs}]`);
      }
      return null;
    }
    case 'acquire': {
      if (cmd.mode === 'exclusive' && cmd.limit !== undefined) {
        return invalidArgument('limit applies to shared acquires only');
      }
      const delay = num('lockDelayMs');
      if (delay !== undefined && delay > config.maxLockDelayMs) {
        return invalidArgument(`lockDelayMs ${delay} is over the limit of ${config.maxLockDelayMs}`);
      }
      return null;
    }
    default:
      return null;
  }
}
