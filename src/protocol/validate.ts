// Validation of client-protocol frames, on both ends: parseRequest for the node (what a
// client sent), parseServerFrame for the SDK (what a node sent). Pure functions that accept
// ANY value (decodeFrame's output, or worse) and never throw: a frame is either returned as
// a freshly built, well-typed value holding only the fields the protocol defines, or
// described as an error.
import {
  MAX_KEEPALIVE_SESSIONS,
  MAX_STRING_BYTES,
  NONCE_BYTES,
  TOKEN_ID_BYTES,
  type ErrorCode,
  type Fence,
  type LockMode,
  type Request,
  type Response,
  type ServerEvent,
  type ServerFrame,
  type TxnCompare,
  type TxnOp,
  type WireError,
} from './client-protocol.js';
import { OPS, type Op } from './ops.js';

export interface RequestError {
  /** The request's id when it could be read, so the error can be answered to it. */
  readonly id?: number;
  readonly error: WireError;
}

export type ParsedRequest = Request | RequestError;

export function isRequestError(r: ParsedRequest): r is RequestError {
  return 'error' in r;
}

/** A server frame the SDK cannot use; `id` when a response's id was readable. */
export interface InvalidServerFrame {
  readonly invalid: string;
  readonly id?: number;
}

export type ParsedServerFrame = ServerFrame | InvalidServerFrame;

export function isInvalidServerFrame(f: ParsedServerFrame): f is InvalidServerFrame {
  return 'invalid' in f;
}

const OP_SET: ReadonlySet<string> = new Set(OPS);

/** A revoke's reason travels in the log entry and the audit line: short (lockfsm's bound). */
const MAX_REASON_BYTES = 256;

const ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'BAD_FRAME',
  'FRAME_TOO_LARGE',
  'UNKNOWN_OP',
  'INVALID_ARGUMENT',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'NOT_LEADER',
  'UNAVAILABLE',
  'TIMEOUT',
  'UNKNOWN_SESSION',
  'NOT_HOLDER',
  'FENCED',
  'STALE_SEQUENCE',
  'LIMIT_EXCEEDED',
  'CONFLICT',
  'RATE_LIMITED',
  'COMPACTED',
  'INTERNAL',
]);

// ---- field readers ---------------------------------------------------------------------------

/** Thrown inside this module only; parse functions turn it into a returned error. */
class Invalid extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

type Obj = Readonly<Record<string, unknown>>;

function isPlainObject(x: unknown): x is Obj {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto: unknown = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/** A safe integer >= min, or undefined. (-0 comes back as 0: it must not survive a round trip
 *  as a different value.) */
function uintValue(x: unknown, min = 0): number | undefined {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= min ? x + 0 : undefined;
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A UTF-16 surrogate without its partner: no Unicode text, and no UTF-8 encoding, has one
 *  (JSON's "\ud800" makes one; stored, it reads back as something else on every node). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Control characters (Unicode's Cc: C0, DEL, C1): a name holding ESC or BEL is shown on
 *  an operator's terminal by every tool that lists it, and acts there. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Reads the fields of one map; `where` prefixes error messages ("acquire", "fence"...).
 *  `request`: the fields of a client's request, whose strings must be well-formed Unicode. */
class Fields {
  constructor(
    private readonly obj: Obj,
    private readonly where: string,
    private readonly request = false,
  ) {}

  /** An own property; absent and nil are the same (other languages often send nil). */
  private get(name: string): unknown {
    const v = Object.prototype.hasOwnProperty.call(this.obj, name) ? this.obj[name] : undefined;
    return v === null ? undefined : v;
  }

  private fail(name: string, expected: string): never {
    throw new Invalid('INVALID_ARGUMENT', `${this.where}.${name}: expected ${expected}`);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  uint(name: string, min = 0): number {
    const v = uintValue(this.get(name), min);
    if (v === undefined) this.fail(name, min === 0 ? 'a non-negative integer' : `an integer >= ${min}`);
    return v;
  }

  optUint(name: string, min = 0): number | undefined {
    return this.has(name) ? this.uint(name, min) : undefined;
  }

  /** A string of at most MAX_STRING_BYTES UTF-8 bytes; `nonEmpty` for names and keys. */
  string(name: string, nonEmpty: boolean): string {
    const v = this.get(name);
    if (typeof v !== 'string' || (nonEmpty && v.length === 0) || utf8Length(v) > MAX_STRING_BYTES) {
      this.fail(name, `a string of ${nonEmpty ? 1 : 0} to ${MAX_STRING_BYTES} UTF-8 bytes`);
    }
    if (this.request && LONE_SURROGATE.test(v)) this.fail(name, 'well-formed Unicode text (it holds a lone surrogate)');
    return v;
  }

  /**
   * A name a request creates (a lock, an election, a key, an operation, a session label; a
   * revoke's reason, which the revoked holder is shown, is held to the same rule):
   * no control characters. Names that exist are still accepted where a request only refers
   * to them (release, get, delete...), so a name made before this rule can be cleaned up.
   */
  newName(name: string): string {
    const v = this.string(name, true);
    if (CONTROL.test(v)) this.fail(name, 'a name without control characters (U+0000-U+001F, U+007F-U+009F)');
    return v;
  }

  optString(name: string, nonEmpty: boolean): string | undefined {
    return this.has(name) ? this.string(name, nonEmpty) : undefined;
  }

  bool(name: string): boolean {
    const v = this.get(name);
    if (typeof v !== 'boolean') this.fail(name, 'a boolean');
    return v;
  }

  optBool(name: string): boolean | undefined {
    return this.has(name) ? this.bool(name) : undefined;
  }

  bytes(name: string): Uint8Array {
    const v = this.get(name);
    if (!(v instanceof Uint8Array)) this.fail(name, 'binary (msgpack bin)');
    return v;
  }

  /** Binary of exactly `length` bytes. */
  fixedBytes(name: string, length: number): Uint8Array {
    const v = this.get(name);
    if (!(v instanceof Uint8Array) || v.length !== length) this.fail(name, `${length} bytes of binary (msgpack bin)`);
    return v;
  }

  /** A field that is nil/absent or else a value of the given reader. */
  orNull<T>(name: string, read: (name: string) => T): T | null {
    return this.has(name) ? read(name) : null;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T {
    const v = this.get(name);
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) this.fail(name, `one of ${values.join(', ')}`);
    return v as T;
  }

  mode(name: string): LockMode {
    return this.oneOf<LockMode>(name, ['exclusive', 'shared']);
  }

  /** The fields of a nested map. */
  map(name: string, shape: string): Fields {
    const v = this.get(name);
    if (!isPlainObject(v)) this.fail(name, `a map ${shape}`);
    return new Fields(v, `${this.where}.${name}`, this.request);
  }

  fence(name: string): Fence {
    const f = this.map(name, '{lock, token}');
    return { lock: f.string('lock', true), token: f.uint('token', 1) };
  }

  /** A map of up to 64 names (1..64 bytes) to non-negative integers (settings by key). */
  numberMap(name: string): Record<string, number> {
    const v = this.get(name);
    const expected = 'a map of up to 64 names to non-negative integers';
    if (!isPlainObject(v)) this.fail(name, expected);
    const keys = Object.keys(v);
    if (keys.length === 0 || keys.length > 64) this.fail(name, expected);
    const out: Record<string, number> = {};
    for (const k of keys) {
      const n = uintValue(v[k]);
      if (k.length === 0 || utf8Length(k) > 64 || n === undefined) this.fail(`${name}.${k.slice(0, 64)}`, 'a non-negative integer');
      out[k] = n;
    }
    return out;
  }

  optFence(name: string): Fence | undefined {
    return this.has(name) ? this.fence(name) : undefined;
  }

  /** An array of at most `max` integers, each >= `min`. */
  uintList(name: string, min: number, max: number): number[] {
    const v = this.get(name);
    if (!Array.isArray(v) || v.length > max) this.fail(name, `an array of at most ${max} integers`);
    return Array.from(v, (x: unknown, i) => uintValue(x, min) ?? this.fail(`${name}[${i}]`, `an integer >= ${min}`));
  }

  /** An array of at most MAX_LIST_ITEMS maps, each read by `item` (its own Fields). */
  list<T>(name: string, item: (f: Fields) => T): T[] {
    const v = this.get(name);
    if (!Array.isArray(v) || v.length > MAX_LIST_ITEMS) this.fail(name, `an array of at most ${MAX_LIST_ITEMS} maps`);
    // Array.from visits holes (as undefined, refused below); map would skip and keep them.
    return Array.from(v, (x: unknown, i) => {
      if (!isPlainObject(x)) this.fail(`${name}[${i}]`, 'a map');
      return item(new Fields(x, `${this.where}.${name}[${i}]`, this.request));
    });
  }

  /** The (session, seq, ackedSeq) triple of session-scoped writes. */
  sequenced(): { session: number; seq: number; ackedSeq?: number } {
    const session = this.uint('session', 1);
    const seq = this.uint('seq', 1);
    const ackedSeq = this.optUint('ackedSeq');
    if (ackedSeq !== undefined && ackedSeq >= seq) this.fail('ackedSeq', `an integer below seq (${seq})`);
    return withoutUndefined({ session, seq, ackedSeq });
  }
}

/** Items of a list field (a transaction's compares and writes); the cluster's own bound
 *  (txn.maxOps) is tighter. */
const MAX_LIST_ITEMS = 64;

function txnCompare(f: Fields): TxnCompare {
  const target = f.oneOf('target', ['revision', 'absent', 'lock'] as const);
  switch (target) {
    case 'revision':
      return { target, key: f.string('key', true), op: f.oneOf('op', ['eq', 'ne', 'gt', 'lt'] as const), revision: f.uint('revision') };
    case 'absent':
      return { target, key: f.string('key', true) };
    case 'lock':
      return { target, lock: f.string('lock', true), token: f.uint('token', 1) };
  }
}

function txnOp(f: Fields): TxnOp {
  const op = f.oneOf('op', ['put', 'delete'] as const);
  if (op === 'delete') return { op, key: f.string('key', true) };
  return withoutUndefined({ op, key: f.newName('key'), value: f.bytes('value'), ephemeral: f.optBool('ephemeral') });
}

/** Optional fields are left out rather than set to undefined. */
function withoutUndefined<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}

// ---- requests ---------------------------------------------------------------------------------

/** The id of a frame that looks like a request, if it has a usable one. */
export function recoverRequestId(x: unknown): number | undefined {
  try {
    if (!isPlainObject(x)) return undefined;
    return uintValue(Object.prototype.hasOwnProperty.call(x, 'id') ? x.id : undefined);
  } catch {
    return undefined;
  }
}

export function parseRequest(x: unknown): ParsedRequest {
  let id: number | undefined;
  try {
    if (!isPlainObject(x)) return { error: wireError('BAD_FRAME', 'a request must be a map') };
    id = recoverRequestId(x);
    if (id === undefined) return { error: wireError('BAD_FRAME', 'a request needs an id: a non-negative integer') };
    const op = x.op;
    if (typeof op !== 'string') return { id, error: wireError('BAD_FRAME', 'a request needs an op: a string') };
    if (!OP_SET.has(op)) return { id, error: wireError('UNKNOWN_OP', `unknown op "${op.slice(0, 64)}"`) };
    return parseOp(id, op as Op, new Fields(x, op, true));
  } catch (err) {
    if (err instanceof Invalid) return withoutUndefined({ id, error: wireError(err.code, err.message) });
    // Only hostile objects (getters, proxies) get here; decoded frames never do.
    return withoutUndefined({ id, error: wireError('BAD_FRAME', 'unreadable request') });
  }
}

/** A hello, or a challenge hello (a challenge and no token: node-proof.ts), which authenticates
 *  nothing, so a token in it would be ignored: refused instead, so that nobody believes it
 *  was used. */
function parseHello(id: number, f: Fields): Request {
  const version = f.uint('version');
  const token = f.optString('token', false);
  if (!f.has('challenge')) return withoutUndefined({ id, op: 'hello' as const, version, token });
  if (token !== undefined) throw new Invalid('INVALID_ARGUMENT', 'hello: a challenge carries no token; send the token in a later hello');
  const c = f.map('challenge', '{tokenId, nonce}');
  return { id, op: 'hello', version, challenge: { tokenId: c.fixedBytes('tokenId', TOKEN_ID_BYTES), nonce: c.fixedBytes('nonce', NONCE_BYTES) } };
}

function parseOp(id: number, op: Op, f: Fields): Request {
  switch (op) {
    case 'hello':
      return parseHello(id, f);
    case 'status':
      return { id, op };
    case 'openSession':
      return withoutUndefined({ id, op, ttlMs: f.optUint('ttlMs', 1), label: f.has('label') ? f.newName('label') : undefined });
    case 'attach':
    case 'keepAlive':
      return { id, op, session: f.uint('session', 1) };
    case 'keepAlives':
      return { id, op, sessions: f.uintList('sessions', 1, MAX_KEEPALIVE_SESSIONS) };
    case 'closeSession':
      return { id, op, ...f.sequenced() };
    case 'acquire': {
      const mode = f.mode('mode');
      const limit = f.optUint('limit', 1);
      if (limit !== undefined && mode !== 'shared') throw new Invalid('INVALID_ARGUMENT', 'acquire.limit: only shared locks take a limit');
      return withoutUndefined({
        id,
        op,
        ...f.sequenced(),
        name: f.newName('name'),
        mode,
        limit,
        wait: f.bool('wait'),
        lockDelayMs: f.optUint('lockDelayMs'),
      });
    }
    case 'release':
      return { id, op, ...f.sequenced(), name: f.string('name', true), token: f.uint('token', 1) };
    case 'cancelWait':
      return { id, op, ...f.sequenced(), name: f.string('name', true) };
    case 'get':
      return { id, op, name: f.string('name', true) };
    case 'locks':
      return withoutUndefined({ id, op, prefix: f.optString('prefix', false), limit: f.optUint('limit', 1) });
    case 'campaign':
      return { id, op, ...f.sequenced(), election: f.newName('election'), value: f.string('value', false) };
    case 'proclaim':
      return {
        id,
        op,
        ...f.sequenced(),
        election: f.string('election', true),
        token: f.uint('token', 1),
        value: f.string('value', false),
      };
    case 'resign':
      return withoutUndefined({ id, op, ...f.sequenced(), election: f.string('election', true), token: f.optUint('token', 1) });
    case 'leader':
    case 'observe':
    case 'unobserve':
      return { id, op, election: f.string('election', true) };
    case 'put':
      return withoutUndefined({
        id,
        op,
        ...f.sequenced(),
        key: f.newName('key'),
        value: f.bytes('value'),
        fence: f.optFence('fence'),
        ifRevision: f.optUint('ifRevision'),
        ephemeral: f.optBool('ephemeral'),
      });
    case 'txn':
      return withoutUndefined({
        id,
        op,
        ...f.sequenced(),
        compare: f.list('compare', txnCompare),
        success: f.list('success', txnOp),
        failure: f.has('failure') ? f.list('failure', txnOp) : [],
        fence: f.optFence('fence'),
      });
    case 'delete':
      return withoutUndefined({
        id,
        op,
        ...f.sequenced(),
        key: f.string('key', true),
        fence: f.optFence('fence'),
        ifRevision: f.optUint('ifRevision'),
      });
    case 'kvGet':
      return { id, op, key: f.string('key', true) };
    case 'watch': {
      const fromRevision = f.optUint('fromRevision');
      const snapshot = f.optBool('snapshot');
      if (fromRevision !== undefined && snapshot) throw new Invalid('INVALID_ARGUMENT', 'watch: give fromRevision (resume) or snapshot (start), not both');
      return withoutUndefined({ id, op, prefix: f.string('prefix', false), fromRevision, snapshot });
    }
    case 'unwatch':
      return { id, op, prefix: f.string('prefix', false) };
    case 'sessions':
      return withoutUndefined({ id, op, prefix: f.optString('prefix', false), owner: f.optString('owner', true), limit: f.optUint('limit', 1), after: f.optUint('after') });
    case 'sessionInfo':
      return { id, op, session: f.uint('session', 1) };
    case 'revokeSession': {
      const reason = f.newName('reason'); // shown to the holder and on operators' terminals
      if (utf8Length(reason) > MAX_REASON_BYTES) throw new Invalid('INVALID_ARGUMENT', `revokeSession.reason: at most ${MAX_REASON_BYTES} UTF-8 bytes`);
      return { id, op, session: f.uint('session', 1), reason };
    }
    case 'beginOp':
      return withoutUndefined({
        id,
        op,
        ...f.sequenced(),
        opKey: f.newName('opKey'),
        fence: f.fence('fence'),
        retry: f.optBool('retry'),
      });
    case 'completeOp':
      return { id, op, ...f.sequenced(), opKey: f.string('opKey', true), result: f.bytes('result'), fence: f.fence('fence') };
    case 'members':
    case 'config':
      return { id, op };
    case 'configure':
      return { id, op, settings: f.numberMap('settings') };
    case 'snapshot':
      return withoutUndefined({ id, op, backup: f.optBool('backup'), backupId: f.optString('backupId', true), offset: f.optUint('offset') });
    case 'addMember':
      return { id, op, member: f.string('member', true), peerUrl: f.string('peerUrl', true), clientUrl: f.string('clientUrl', true) };
    case 'removeMember':
      return { id, op, member: f.string('member', true) };
    case 'transferLeader':
      return withoutUndefined({ id, op, to: f.optString('to', true) });
  }
}

function wireError(code: ErrorCode, message: string): WireError {
  return { code, message };
}

// ---- server frames (for the SDK) --------------------------------------------------------------

export function parseServerFrame(x: unknown): ParsedServerFrame {
  let id: number | undefined;
  try {
    if (!isPlainObject(x)) return { invalid: 'a server frame must be a map' };
    if (Object.prototype.hasOwnProperty.call(x, 'event')) return parseEvent(new Fields(x, 'event'), x.event);
    id = recoverRequestId(x);
    if (id === undefined) return { invalid: 'a response needs an id: a non-negative integer' };
    const f = new Fields(x, 'response');
    const ok = f.bool('ok');
    if (ok) {
      const response: Response = { id, ok, result: Object.prototype.hasOwnProperty.call(x, 'result') ? x.result : undefined };
      return response;
    }
    return { id, ok, error: parseWireError(x.error) };
  } catch (err) {
    const invalid = err instanceof Invalid ? err.message : 'unreadable server frame';
    return id === undefined ? { invalid } : { invalid, id };
  }
}

function parseWireError(x: unknown): WireError {
  if (!isPlainObject(x)) throw new Invalid('BAD_FRAME', 'response.error: expected a map {code, message}');
  const f = new Fields(x, 'response.error');
  const rawCode = f.string('code', true);
  const rawMessage = typeof x.message === 'string' ? x.message : '';
  // A newer node may answer with a code this SDK does not know: keep it readable, as INTERNAL.
  const known = ERROR_CODES.has(rawCode);
  const code = (known ? rawCode : 'INTERNAL') as ErrorCode;
  const message = known ? rawMessage : `${rawCode}: ${rawMessage}`;
  let leaderHint: WireError['leaderHint'];
  if (f.has('leaderHint')) {
    const hint = x.leaderHint;
    if (!isPlainObject(hint)) throw new Invalid('BAD_FRAME', 'response.error.leaderHint: expected a map {id, clientUrl}');
    const h = new Fields(hint, 'response.error.leaderHint');
    leaderHint = { id: h.string('id', true), clientUrl: h.string('clientUrl', true) };
  }
  // currentToken: absent, or nil (the lock is free), or the token the lock has now.
  const currentToken = Object.prototype.hasOwnProperty.call(x, 'currentToken') ? f.orNull('currentToken', (n) => f.uint(n)) : undefined;
  const currentRevision = f.optUint('currentRevision');
  const compactRevision = f.optUint('compactRevision');
  return withoutUndefined({ code, message, leaderHint, currentToken, currentRevision, compactRevision });
}

const RELEASE_REASONS = ['release', 'close', 'expire', 'cancel'] as const;

function parseEvent(f: Fields, kind: unknown): ServerEvent | InvalidServerFrame {
  const index = f.uint('index', 1);
  switch (kind) {
    case 'granted':
      return { event: kind, index, session: f.uint('session', 1), name: f.string('name', true), token: f.uint('token', 1), mode: f.mode('mode') };
    case 'released':
      return {
        event: kind,
        index,
        session: f.uint('session', 1),
        name: f.string('name', true),
        token: f.uint('token', 1),
        reason: f.oneOf('reason', RELEASE_REASONS),
      };
    case 'sessionExpired': {
      // reason: absent from older nodes (an expiry); an unknown one (a newer node's) reads as one.
      const reason = f.has('reason') ? (f.string('reason', true) === 'revoke' ? 'revoke' : 'expire') : undefined;
      return withoutUndefined({ event: kind, index, session: f.uint('session', 1), reason, detail: f.optString('detail', false), by: f.optString('by', false) });
    }
    case 'electionChanged':
      return {
        event: kind,
        index,
        election: f.string('election', true),
        leader: f.orNull('leader', (n) => f.uint(n, 1)),
        value: f.orNull('value', (n) => f.string(n, false)),
        token: f.orNull('token', (n) => f.uint(n, 1)),
      };
    case 'kvChanged':
      return {
        event: kind,
        index,
        key: f.string('key', true),
        value: f.orNull('value', (n) => f.bytes(n)),
        revision: f.uint('revision'),
      };
    default:
      return { invalid: `unknown event ${typeof kind === 'string' ? `"${kind.slice(0, 64)}"` : '(not a string)'}` };
  }
}
