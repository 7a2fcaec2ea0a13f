// Full validation of a command's shape and of every bound that does not depend on state.
// Both entry paths go through it: decodeCommand (bytes from the log) and apply (a typed
// object from the server, which may still carry client-supplied garbage at run time).
// It returns a fresh canonical object: only known fields, in a fixed order, no undefined
// values, and copies of byte arrays, so nothing the caller keeps can later change state
// and the same command always encodes to the same bytes.

import { SETTING_NAMES, type MachineConfig } from './config.js';
import { invalidArgument, limitExceeded } from './errors.js';
import { utf8Length } from './text.js';
import { REVOKE_REASON_MAX_BYTES, SESSION_LABEL_MAX_BYTES, type Command, type CommandType, type MachineError } from './types.js';

type FieldKind =
  | 'id' // positive safe integer: session, seq, token, index
  | 'uint' // non-negative safe integer
  | 'bool'
  | 'mode'
  | 'name' // lock or election name: 1..maxNameLength UTF-8 bytes
  | 'key' // kv key or opKey: 1..maxKeyBytes UTF-8 bytes
  | 'bytes' // Uint8Array of at most maxValueBytes
  | 'text' // string of at most maxValueBytes UTF-8 bytes (may be empty)
  | 'label' // a session's label for people: 1..SESSION_LABEL_MAX_BYTES UTF-8 bytes
  | 'reason' // an operator's words: 1..REVOKE_REASON_MAX_BYTES UTF-8 bytes
  | 'compares' // a transaction's conditions: up to maxTxnOps TxnCompare
  | 'txnOps' // a transaction's branch: up to maxTxnOps TxnOp, each key once
  | 'fence' // {lock: name, token: id}
  | 'settings'; // {settingName: non-negative safe integer, ...}: some of config.ts's settings

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
  openSession: { required: { ttlMs: 'uint' }, optional: { label: 'label', owner: 'label' } },
  closeSession: scoped({}),
  expireSession: { required: { session: 'id' }, optional: {} },
  revokeSession: { required: { session: 'id' }, optional: { reason: 'reason', by: 'label' } },
  acquire: scoped({ name: 'name', mode: 'mode', wait: 'bool' }, { limit: 'id', lockDelayMs: 'uint' }),
  release: scoped({ name: 'name', token: 'id' }),
  cancelWait: scoped({ name: 'name' }),
  lockDelayElapsed: { required: { name: 'name' }, optional: { since: 'id' } },
  campaign: scoped({ election: 'name', value: 'text' }),
  proclaim: scoped({ election: 'name', token: 'id', value: 'text' }),
  resign: scoped({ election: 'name' }, { token: 'id' }),
  put: scoped({ key: 'key', value: 'bytes' }, { ifRevision: 'uint', ephemeral: 'bool' }),
  delete: scoped({ key: 'key' }, { ifRevision: 'uint' }),
  txn: scoped({ compare: 'compares', success: 'txnOps', failure: 'txnOps' }),
  // the ledger is fenced by definition: fence is required, not optional
  beginOp: { required: { ...SCOPED_REQUIRED, opKey: 'key', fence: 'fence', at: 'uint' }, optional: { ackedSeq: 'uint', retry: 'bool' } },
  completeOp: {
    required: { ...SCOPED_REQUIRED, opKey: 'key', result: 'bytes', fence: 'fence', at: 'uint' },
    optional: { ackedSeq: 'uint' },
  },
  // `at` (cluster time; the cut-offs follow from the settings), or the cut-offs themselves
  // (entries written before settings were replicated): checkAcrossFields wants one of them.
  pruneOps: { required: {}, optional: { at: 'uint', olderThan: 'uint', abandonedOlderThan: 'uint', max: 'uint' } },
  configure: { required: { settings: 'settings' }, optional: { initial: 'bool' } },
  checkpoint: { required: {}, optional: {} },
};

const SETTINGS: ReadonlySet<string> = new Set(SETTING_NAMES);

export const COMMAND_TYPES: readonly CommandType[] = Object.keys(SPECS) as CommandType[];

/** The specs as field lists, computed once: validation runs for every entry. */
interface FieldList {
  readonly required: readonly (readonly [string, FieldKind])[];
  readonly optional: readonly (readonly [string, FieldKind])[];
  readonly known: ReadonlySet<string>;
}

const FIELDS = new Map<string, FieldList>(
  COMMAND_TYPES.map((type) => {
    const spec = SPECS[type];
    const required = Object.entries(spec.required);
    const optional = Object.entries(spec.optional).filter(([f]) => !Object.hasOwn(spec.required, f));
    const known = new Set(['type', ...required.map(([f]) => f), ...optional.map(([f]) => f)]);
    return [type, { required, optional, known }];
  }),
);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** What checkField returns instead of a value when it refuses (allocated only then). */
class Refusal {
  constructor(readonly error: MachineError) {}
}

function checkString(v: unknown, field: string, maxBytes: number, allowEmpty: boolean, tooLong: 'invalid' | 'limit'): unknown {
  if (typeof v !== 'string') return new Refusal(invalidArgument(`${field} must be a string`));
  const len = utf8Length(v);
  if (len < 0) return new Refusal(invalidArgument(`${field} is not valid Unicode (lone surrogate)`));
  if (len === 0 && !allowEmpty) return new Refusal(invalidArgument(`${field} must not be empty`));
  if (len > maxBytes) {
    const message = `${field} is ${len} bytes long, over the limit of ${maxBytes}`;
    return new Refusal(tooLong === 'invalid' ? invalidArgument(message) : limitExceeded(message));
  }
  return v;
}

/** The field's canonical value, or a Refusal. */
function checkField(kind: FieldKind, v: unknown, field: string, config: MachineConfig): unknown {
  switch (kind) {
    case 'id':
    case 'uint': {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
        return new Refusal(invalidArgument(`${field} must be a non-negative safe integer`));
      }
      if (kind === 'id' && v === 0) return new Refusal(invalidArgument(`${field} must be at least 1`));
      return v === 0 ? 0 : v; // no -0: it would encode differently from 0
    }
    case 'bool':
      return typeof v === 'boolean' ? v : new Refusal(invalidArgument(`${field} must be a boolean`));
    case 'mode':
      return v === 'exclusive' || v === 'shared'
        ? v
        : new Refusal(invalidArgument(`${field} must be 'exclusive' or 'shared'`));
    case 'name':
      return checkString(v, field, config.maxNameLength, false, 'invalid');
    case 'key':
      return checkString(v, field, config.maxKeyBytes, false, 'limit');
    case 'text':
      return checkString(v, field, config.maxValueBytes, true, 'limit');
    case 'label':
      return checkString(v, field, SESSION_LABEL_MAX_BYTES, false, 'invalid');
    case 'reason':
      return checkString(v, field, REVOKE_REASON_MAX_BYTES, false, 'invalid');
    case 'compares':
      return checkList(v, field, config, checkCompare);
    case 'txnOps': {
      const ops = checkList(v, field, config, checkTxnOp);
      if (ops instanceof Refusal) return ops;
      const keys = new Set<string>();
      for (const op of ops as { key: string }[]) {
        if (keys.has(op.key)) return new Refusal(invalidArgument(`${field}: key ${JSON.stringify(op.key.slice(0, 60))} appears twice; a branch writes each key once`));
        keys.add(op.key);
      }
      return ops;
    }
    case 'bytes': {
      if (!(v instanceof Uint8Array)) return new Refusal(invalidArgument(`${field} must be bytes (Uint8Array)`));
      if (v.length > config.maxValueBytes) {
        return new Refusal(limitExceeded(`${field} is ${v.length} bytes, over the limit of ${config.maxValueBytes}`));
      }
      return new Uint8Array(v); // a plain copy: neither a Buffer nor a view of the entry
    }
    case 'fence': {
      if (!isPlainObject(v)) return new Refusal(invalidArgument(`${field} must be an object {lock, token}`));
      for (const k in v) {
        if (k !== 'lock' && k !== 'token') return new Refusal(invalidArgument(`${field} has an unknown field '${k}'`));
      }
      const lock = checkString(v.lock, `${field}.lock`, config.maxNameLength, false, 'invalid');
      if (lock instanceof Refusal) return lock;
      const token = checkField('id', v.token, `${field}.token`, config);
      if (token instanceof Refusal) return token;
      return { lock, token };
    }
    case 'settings': {
      if (!isPlainObject(v)) return new Refusal(invalidArgument(`${field} must be an object of settings`));
      for (const k in v) {
        if (!SETTINGS.has(k)) return new Refusal(invalidArgument(`${field} has an unknown setting '${k.slice(0, 60)}'`));
      }
      // Canonical: the settings in SETTING_NAMES order, so one change encodes one way.
      const out: Record<string, number> = {};
      for (const name of SETTING_NAMES) {
        if (v[name] === undefined) continue;
        const n = checkField('uint', v[name], `${field}.${name}`, config);
        if (n instanceof Refusal) return n;
        out[name] = n as number;
      }
      if (Object.keys(out).length === 0) return new Refusal(invalidArgument(`${field} names no setting`));
      return out;
    }
  }
}

/** An array of at most maxTxnOps items, each checked (and copied) by `item`. */
function checkList(v: unknown, field: string, config: MachineConfig, item: (x: unknown, field: string, config: MachineConfig) => unknown): unknown {
  if (!Array.isArray(v)) return new Refusal(invalidArgument(`${field} must be an array`));
  if (v.length > config.maxTxnOps) {
    return new Refusal(limitExceeded(`${field} has ${v.length} items, over the limit of ${config.maxTxnOps} (txn.maxOps)`));
  }
  const out: unknown[] = [];
  for (let i = 0; i < v.length; i++) {
    const checked = item(v[i], `${field}[${i}]`, config);
    if (checked instanceof Refusal) return checked;
    out.push(checked);
  }
  return out;
}

/** The fields of a nested object: only `known`, every one of `required` present. */
function nestedFields(v: unknown, field: string, known: readonly string[]): Record<string, unknown> | Refusal {
  if (!isPlainObject(v)) return new Refusal(invalidArgument(`${field} must be an object`));
  for (const k in v) {
    if (!known.includes(k)) return new Refusal(invalidArgument(`${field} has an unknown field '${k.slice(0, 40)}'`));
  }
  return v;
}

/** A TxnCompare, canonical (fields in a fixed order). */
function checkCompare(v: unknown, field: string, config: MachineConfig): unknown {
  const o = nestedFields(v, field, ['target', 'key', 'op', 'revision', 'lock', 'token']);
  if (o instanceof Refusal) return o;
  const need = (name: string, kind: FieldKind): unknown =>
    o[name] === undefined ? new Refusal(invalidArgument(`${field}: missing field '${name}'`)) : checkField(kind, o[name], `${field}.${name}`, config);
  const extra = (allowed: readonly string[]): Refusal | null => {
    for (const k in o) if (k !== 'target' && !allowed.includes(k)) return new Refusal(invalidArgument(`${field}: '${k}' does not apply to target ${String(o.target)}`));
    return null;
  };
  switch (o.target) {
    case 'revision': {
      const bad = extra(['key', 'op', 'revision']);
      if (bad) return bad;
      const key = need('key', 'key');
      if (key instanceof Refusal) return key;
      if (o.op !== 'eq' && o.op !== 'ne' && o.op !== 'gt' && o.op !== 'lt') return new Refusal(invalidArgument(`${field}.op must be 'eq', 'ne', 'gt' or 'lt'`));
      const revision = need('revision', 'uint');
      if (revision instanceof Refusal) return revision;
      return { target: 'revision', key, op: o.op, revision };
    }
    case 'absent': {
      const bad = extra(['key']);
      if (bad) return bad;
      const key = need('key', 'key');
      return key instanceof Refusal ? key : { target: 'absent', key };
    }
    case 'lock': {
      const bad = extra(['lock', 'token']);
      if (bad) return bad;
      const lock = need('lock', 'name');
      if (lock instanceof Refusal) return lock;
      const token = need('token', 'id');
      return token instanceof Refusal ? token : { target: 'lock', lock, token };
    }
    default:
      return new Refusal(invalidArgument(`${field}.target must be 'revision', 'absent' or 'lock'`));
  }
}

/** A TxnOp, canonical. */
function checkTxnOp(v: unknown, field: string, config: MachineConfig): unknown {
  const o = nestedFields(v, field, ['op', 'key', 'value', 'ephemeral']);
  if (o instanceof Refusal) return o;
  if (o.op !== 'put' && o.op !== 'delete') return new Refusal(invalidArgument(`${field}.op must be 'put' or 'delete'`));
  if (o.key === undefined) return new Refusal(invalidArgument(`${field}: missing field 'key'`));
  const key = checkField('key', o.key, `${field}.key`, config);
  if (key instanceof Refusal) return key;
  if (o.op === 'delete') {
    if (o.value !== undefined || o.ephemeral !== undefined) return new Refusal(invalidArgument(`${field}: a delete takes only a key`));
    return { op: 'delete', key };
  }
  if (o.value === undefined) return new Refusal(invalidArgument(`${field}: missing field 'value'`));
  const value = checkField('bytes', o.value, `${field}.value`, config);
  if (value instanceof Refusal) return value;
  if (o.ephemeral === undefined) return { op: 'put', key, value };
  const ephemeral = checkField('bool', o.ephemeral, `${field}.ephemeral`, config);
  return ephemeral instanceof Refusal ? ephemeral : { op: 'put', key, value, ephemeral };
}

/**
 * Checks `value` is a well-formed command within the config's bounds; returns a canonical
 * copy, or an INVALID_ARGUMENT / LIMIT_EXCEEDED error. Never throws.
 */
export function validateCommand(value: unknown, config: MachineConfig): Command | MachineError {
  if (!isPlainObject(value)) return invalidArgument('a command must be an object');
  const type = value.type;
  const fields = typeof type === 'string' ? FIELDS.get(type) : undefined;
  if (fields === undefined) {
    return invalidArgument(`unknown command type ${typeof type === 'string' ? JSON.stringify(type.slice(0, 40)) : typeof type}`);
  }
  for (const k in value) {
    if (!fields.known.has(k)) return invalidArgument(`${type}: unknown field ${JSON.stringify(k.slice(0, 40))}`);
  }
  const out: Record<string, unknown> = { type };
  for (const [field, kind] of fields.required) {
    const v = value[field];
    if (v === undefined) return invalidArgument(`${type}: missing field '${field}'`);
    const checked = checkField(kind, v, field, config);
    if (checked instanceof Refusal) return checked.error;
    out[field] = checked;
  }
  for (const [field, kind] of fields.optional) {
    const v = value[field];
    if (v === undefined) continue;
    const checked = checkField(kind, v, field, config);
    if (checked instanceof Refusal) return checked.error;
    out[field] = checked;
  }
  const crossError = checkAcrossFields(out, config);
  if (crossError !== null) return crossError;
  // The spec above is the single source of these shapes; this is the one place the
  // checked record becomes the typed union.
  return out as unknown as Command;
}

/** Bounds that involve more than one field or the config. */
function checkAcrossFields(cmd: Record<string, unknown>, config: MachineConfig): MachineError | null {
  const ackedSeq = cmd.ackedSeq as number | undefined;
  const seq = cmd.seq as number | undefined;
  if (ackedSeq !== undefined && seq !== undefined && ackedSeq >= seq) {
    return invalidArgument(`ackedSeq (${ackedSeq}) must be lower than seq (${seq})`);
  }
  switch (cmd.type) {
    case 'openSession': {
      const ttl = cmd.ttlMs as number;
      if (ttl < config.minTtlMs || ttl > config.maxTtlMs) {
        return invalidArgument(`ttlMs ${ttl} is outside [${config.minTtlMs}, ${config.maxTtlMs}]`);
      }
      return null;
    }
    case 'acquire': {
      if (cmd.mode === 'exclusive' && cmd.limit !== undefined) {
        return invalidArgument('limit applies to shared acquires only');
      }
      const delay = cmd.lockDelayMs as number | undefined;
      if (delay !== undefined && delay > config.maxLockDelayMs) {
        return invalidArgument(`lockDelayMs ${delay} is over the limit of ${config.maxLockDelayMs}`);
      }
      return null;
    }
    case 'pruneOps':
      if (cmd.at === undefined && cmd.olderThan === undefined) return invalidArgument('pruneOps: give at (or olderThan)');
      if (cmd.at !== undefined && (cmd.olderThan !== undefined || cmd.abandonedOlderThan !== undefined)) {
        return invalidArgument('pruneOps: with at, the cut-offs come from the settings');
      }
      return null;
    default:
      return null;
  }
}
