// Every decoder and validator that sees bytes or values from outside a node's trust, as a
// fast-check property: random bytes, truncated and mutated valid inputs, wrong types, huge
// numbers and deep nesting. Each target accepts or refuses an input in its documented way
// (a returned error or its own error class) and never throws anything else, never hangs.
// Shared by test/security/fuzz.test.ts (a few thousand inputs) and bench/fuzz.ts (100,000+).
import fc from 'fast-check';
import { DEFAULT_MACHINE_CONFIG, LockMachine, decodeCommand, encodeCommand, isMachineError, validateCommand } from '../../src/lockfsm/index.js';
import { SnapshotError } from '../../src/lockfsm/index.js';
import type { Command } from '../../src/lockfsm/types.js';
import type { Message } from '../../src/raft/types.js';
import { ClientGate } from '../../src/server/api/client-gate.js';
import { ConfigError, validateConfig } from '../../src/config/cluster-config.js';
import { CorruptValue, decodeEntry, decodeHardState, decodeMeta, decodeSnapshotRecord, encodeEntry, encodeHardState, encodeMeta, encodeSnapshotRecord } from '../../src/storage/records.js';
import type { ServerFrame } from '../../src/protocol/client-protocol.js';
import { FrameError, decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { PEER_PROTOCOL_VERSION, newNonce, parseAuth, parseHello, parseWelcome } from '../../src/transport/peer-handshake.js';
import { parseRaftMessage } from '../../src/transport/raft-message.js';
import { isRequestError, parseRequest, parseServerFrame } from '../../src/protocol/validate.js';
import { pino } from 'pino';
import { RAFT_MESSAGE_WITH_EVERY_FIELD, VALID_REQUESTS } from '../transport/examples.js';

export { VALID_REQUESTS };

export type Outcome = 'accepted' | 'refused';

export interface FuzzTarget {
  readonly name: string;
  /** Which surface it guards: the client port, the peer port, the SDK, storage, config. */
  readonly surface: 'client port' | 'peer port' | 'SDK' | 'lock machine' | 'storage' | 'config';
  readonly input: fc.Arbitrary<unknown>;
  /** Feed one input; throws only when the target misbehaved. */
  readonly check: (input: unknown) => Outcome;
}

/** Thrown by a check when a target broke its contract. */
export class ContractBroken extends Error {}

// ---- shared generators ---------------------------------------------------------------------

const HOSTILE_NUMBERS = [2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, NaN, Infinity, -Infinity, -0, 1e308, 0.5];
const HOSTILE_STRINGS = ['', 'x'.repeat(5000), '\u0000', '\uD800', '__proto__', 'constructor', 'toString', '💥'.repeat(2000)];

/** Values of every shape, with the nasty ones over-represented. */
export const wild: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.anything({ maxDepth: 3, withBigInt: true, withNullPrototype: true, withObjectString: true, withTypedArray: true, withSparseArray: true }) },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(...HOSTILE_NUMBERS, ...HOSTILE_STRINGS, null, undefined, true, [], {}, new Uint8Array(0)) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 300 }).map(nested) },
  { weight: 1, arbitrary: fc.bigInt() },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
);

/** An array or map nested `depth` deep (no recursion in the builder). */
export function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
}

/** A valid value with one field (at any depth) replaced, removed, or one added. */
function mutatedValue<T>(valids: readonly T[]): fc.Arbitrary<unknown> {
  return fc.tuple(fc.constantFrom(...valids), fc.nat(), fc.constantFrom('replace', 'remove', 'add'), wild, fc.string({ maxLength: 8 })).map(([v, pick, how, value, key]) =>
    mutate(structuredClone(v) as unknown, pick, how, value, key),
  );
}

function mutate(root: unknown, pick: number, how: string, value: unknown, key: string): unknown {
  // Collect the containers, choose one, then one of its keys.
  const containers: Record<string, unknown>[] = [];
  const walk = (x: unknown, depth: number): void => {
    if (typeof x !== 'object' || x === null || ArrayBuffer.isView(x) || depth > 8) return;
    containers.push(x as Record<string, unknown>);
    for (const v of Object.values(x)) walk(v, depth + 1);
  };
  walk(root, 0);
  if (containers.length === 0) return value;
  const c = containers[pick % containers.length]!;
  const keys = Object.keys(c);
  const k = keys.length ? keys[pick % keys.length]! : key;
  try {
    if (how === 'remove') delete c[k];
    else if (how === 'add') c[key] = value;
    else c[k] = value;
  } catch {
    // A mutation JavaScript refuses (an array's `length` set to a BigInt or to -1): that input
    // cannot exist on the wire either; the generator keeps the value unmutated.
  }
  return root;
}

/** Byte strings made from valid encodings: flipped bytes, truncations, splices, and noise. */
export function mutatedBytes(valids: readonly Uint8Array[]): fc.Arbitrary<Uint8Array> {
  const edits = fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 8 });
  return fc.oneof(
    fc.uint8Array({ maxLength: 256 }),
    fc.tuple(fc.constantFrom(...valids), edits).map(([b, es]) => {
      const out = Uint8Array.from(b);
      for (const e of es) out[e.at % out.length] = e.byte;
      return out;
    }),
    fc.tuple(fc.constantFrom(...valids), fc.nat()).map(([b, cut]) => b.subarray(0, cut % b.length)),
    fc.tuple(fc.constantFrom(...valids), fc.nat(), fc.nat(), fc.uint8Array({ maxLength: 16 })).map(([b, at, n, noise]) => {
      const i = at % (b.length + 1);
      return Uint8Array.from([...b.subarray(0, i), ...noise, ...b.subarray(i + (n % 4))]);
    }),
    // Container headers claiming huge counts or lengths, or nesting past any sane depth.
    fc.tuple(fc.array(fc.constantFrom(0xdc, 0xdd, 0xde, 0xdf, 0xc6, 0xdb, 0xc5, 0xda, 0x9f, 0x8f, 0x91, 0x81, 0xff), { minLength: 1, maxLength: 120 }), fc.uint8Array({ maxLength: 16 })).map(
      ([h, tail]) => Uint8Array.from([...h, ...tail]),
    ),
  );
}

function encodedOrEmpty(x: unknown): Uint8Array {
  try {
    return encodeFrame(x);
  } catch {
    return new Uint8Array(0);
  }
}

// ---- valid examples ------------------------------------------------------------------------

const bin = (...b: number[]): Uint8Array => new Uint8Array(b);
const seq = { session: 42, seq: 3, ackedSeq: 2 };

const VALID_SERVER_FRAMES: ServerFrame[] = [
  { id: 1, ok: true, result: { nodeId: 'n1', clusterId: 'c', leader: 'n2', members: [{ id: 'n1', clientUrl: 'ws://h:1' }] } },
  { id: 2, ok: false, error: { code: 'NOT_LEADER', message: 'm', leaderHint: { id: 'n2', clientUrl: 'ws://h:2' } } },
  { id: 3, ok: false, error: { code: 'FENCED', message: 'm', currentToken: 7 } },
  { event: 'granted', index: 9, session: 3, name: 'a', token: 9, mode: 'exclusive' },
  { event: 'released', index: 10, session: 3, name: 'a', token: 9, reason: 'expire' },
  { event: 'electionChanged', index: 11, election: 'e', leader: 3, value: 'v', token: 11 },
  { event: 'kvChanged', index: 12, key: 'k', value: bin(1), revision: 12 },
  { event: 'sessionExpired', index: 13, session: 3 },
];

const VALID_RAFT: Message[] = [
  RAFT_MESSAGE_WITH_EVERY_FIELD,
  { type: 'vote', from: 'n1', to: 'n2', term: 3, index: 10, logTerm: 2 },
  { type: 'heartbeat', from: 'n1', to: 'n2', term: 3, commit: 5 },
  {
    type: 'snap',
    from: 'n1',
    to: 'n2',
    term: 5,
    snapshot: { meta: { index: 100, term: 5, conf: { voters: ['n1', 'n2', 'n3'], learners: [] } }, offset: 0, total: 3, data: bin(1, 2, 3), done: true },
  },
];

const VALID_COMMANDS: Command[] = [
  { type: 'openSession', ttlMs: 10_000 },
  { type: 'closeSession', ...seq },
  { type: 'expireSession', session: 4 },
  { type: 'acquire', ...seq, name: 'jobs/x', mode: 'shared', limit: 2, wait: true, lockDelayMs: 100 },
  { type: 'release', ...seq, name: 'jobs/x', token: 8 },
  { type: 'cancelWait', ...seq, name: 'jobs/x' },
  { type: 'lockDelayElapsed', name: 'jobs/x', since: 5 },
  { type: 'campaign', ...seq, election: 'e', value: 'v' },
  { type: 'proclaim', ...seq, election: 'e', token: 9, value: 'w' },
  { type: 'resign', ...seq, election: 'e', token: 9 },
  { type: 'put', ...seq, key: 'k', value: bin(1, 2), ifRevision: 0 },
  { type: 'delete', ...seq, key: 'k' },
  { type: 'beginOp', ...seq, opKey: 'op', fence: { lock: 'jobs/x', token: 8 }, at: 1000 },
  { type: 'completeOp', ...seq, opKey: 'op', result: bin(7), fence: { lock: 'jobs/x', token: 8 }, at: 2000 },
  { type: 'pruneOps', olderThan: 100, max: 10 },
];

/** A machine with something of everything, so its snapshot exercises every table. */
function busyMachineSnapshot(): Uint8Array {
  const m = new LockMachine();
  let i = 0;
  const apply = (cmd: Command): unknown => m.apply(++i, cmd).result;
  apply({ type: 'openSession', ttlMs: 10_000 }); // session 1
  apply({ type: 'openSession', ttlMs: 20_000 }); // session 2
  apply({ type: 'acquire', session: 1, seq: 1, name: 'a', mode: 'exclusive', wait: false });
  apply({ type: 'acquire', session: 2, seq: 1, name: 'a', mode: 'exclusive', wait: true });
  apply({ type: 'acquire', session: 2, seq: 2, ackedSeq: 1, name: 'sem', mode: 'shared', limit: 2, wait: false });
  apply({ type: 'campaign', session: 1, seq: 2, ackedSeq: 1, election: 'e', value: 'v' });
  apply({ type: 'put', session: 1, seq: 3, ackedSeq: 2, key: 'k', value: bin(1, 2, 3) });
  apply({ type: 'beginOp', session: 1, seq: 4, ackedSeq: 3, opKey: 'op', fence: { lock: 'a', token: 3 }, at: 1000 });
  return m.snapshot();
}

const VALID_CONFIGS: unknown[] = [
  {
    clusterId: 'palisade-local',
    secret: 'palisade-local-development-secret-change-me',
    nodes: [
      { id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', httpUrl: 'http://127.0.0.1:7301', dataDir: 'data/n1' },
      { id: 'n2', peerUrl: 'ws://127.0.0.1:7102', clientUrl: 'ws://127.0.0.1:7002', dataDir: 'data/n2' },
    ],
    raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 },
    sessions: { defaultTtlMs: 10000, minTtlMs: 1000, maxTtlMs: 3600000, lockDelayMs: 0 },
    snapshot: { entries: 20000, keepTail: 5000 },
  },
  {
    clusterId: 'secure',
    secret: 'a-secret-of-enough-length-0123',
    nodes: [{ id: 'n1', peerUrl: 'wss://10.0.0.1:7101', clientUrl: 'wss://10.0.0.1:7001', dataDir: '/var/lib/palisade' }],
    // Hosts on a network: the lan profile's 1 s election timeout, so TTLs from 2 s.
    sessions: { minTtlMs: 2000 },
    auth: { tokens: [{ name: 'jobs', token: 'jobs-token-0123456789', prefixes: ['jobs/'], readOnly: false }, { name: 'ops', token: 'ops-token-0123456789ab', admin: true }] },
    tls: { peer: { cert: 'certs/{id}.crt', key: 'certs/{id}.key', ca: 'certs/ca.crt', requireClientCert: true }, client: { cert: 'c.crt', key: 'c.key' } },
    limits: { maxFrameBytes: 65536, requestsPerSecond: 50, maxNameBytes: 128 },
  },
];

// ---- the targets ---------------------------------------------------------------------------

const validRequestBytes = VALID_REQUESTS.map((r) => encodeFrame(r));

function decodes(bytes: Uint8Array): unknown | FrameError {
  try {
    return decodeFrame(bytes);
  } catch (e) {
    if (e instanceof FrameError) return e;
    throw new ContractBroken(`decodeFrame threw ${String(e)}`);
  }
}

function noThrow<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw new ContractBroken(`${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

/** Only `allowed` errors may come out of fn. */
function onlyThrows(what: string, allowed: (e: unknown) => boolean, fn: () => unknown): Outcome {
  try {
    fn();
    return 'accepted';
  } catch (e) {
    if (allowed(e)) return 'refused';
    throw new ContractBroken(`${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

const noMachine = () => ({ appliedIndex: 0, sessionOwner: () => undefined, session: () => null, lock: () => null });
/** With tokens (what a secured node runs) and without (so that acceptance shows parsing). */
const gate = new ClientGate(validateConfig(VALID_CONFIGS[1], '/tmp'), pino({ level: 'silent' }), noMachine);
const openGate = new ClientGate(validateConfig(VALID_CONFIGS[0], '/tmp'), pino({ level: 'silent' }), noMachine);

/** A client's frame through everything the node runs before serving it. */
function clientPipeline(bytes: Uint8Array, conn: ReturnType<ClientGate['open']>): Outcome {
  const frame = decodes(bytes);
  if (frame instanceof FrameError) return 'refused';
  const req = noThrow('parseRequest', () => parseRequest(frame));
  if (isRequestError(req)) return 'refused';
  // What it accepts survives the wire unchanged (no field the protocol does not define).
  const again = noThrow('parseRequest (round trip)', () => parseRequest(decodeFrame(encodeFrame(req))));
  if (JSON.stringify(again, bytesAsList) !== JSON.stringify(req, bytesAsList)) throw new ContractBroken('an accepted request changed on a round trip');
  const refused = noThrow('gate.admit', () => conn.admit(req));
  return refused ? 'refused' : 'accepted';
}

/** JSON text of any value (what a config file could hold); bigints as numbers' text. */
function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x)) ?? '';
  } catch {
    return '';
  }
}

function bytesAsList(_k: string, v: unknown): unknown {
  return v instanceof Uint8Array ? [...v] : v;
}

export function fuzzTargets(): FuzzTarget[] {
  const conn = gate.open({ id: 1, remoteAddress: 'fuzz' });
  const openConn = openGate.open({ id: 3, remoteAddress: 'fuzz' });
  const authedConn = gate.open({ id: 2, remoteAddress: 'fuzz' });
  authedConn.admit({ id: 0, op: 'hello', version: 1, token: 'jobs-token-0123456789' });
  const snapshot = busyMachineSnapshot();
  const storageValids = [
    encodeHardState({ term: 5, vote: 'n2', commit: 9 }),
    encodeEntry({ index: 7, term: 3, type: 'normal', data: encodeCommand({ type: 'openSession', ttlMs: 5000 }) }),
    encodeMeta({ clusterId: 'c', nodeId: 'n1' }),
    encodeSnapshotRecord({ meta: { index: 100, term: 5, conf: { voters: ['n1'], learners: [] } }, data: snapshot }),
  ];
  const handshakeValids: unknown[] = [
    { k: 'hello', v: PEER_PROTOCOL_VERSION, nonce: newNonce() },
    { k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId: 'c', from: 'n1', to: 'n2', nonce: newNonce(), mac: new Uint8Array(32) },
    { k: 'welcome', mac: new Uint8Array(32) },
  ];
  const peerFrames: Uint8Array[] = [
    encodeFrame({ k: 'r', m: VALID_RAFT }),
    encodeFrame({ k: 'a', p: { t: 'fwd', rid: 3, req: VALID_REQUESTS[6] } }),
    ...handshakeValids.map((h) => encodeFrame(h)),
  ];
  const configTexts = VALID_CONFIGS.map((c) => JSON.stringify(c));

  return [
    {
      name: 'client frame bytes -> decode -> parseRequest -> gate',
      surface: 'client port',
      input: mutatedBytes(validRequestBytes),
      check: (b) => clientPipeline(b as Uint8Array, (b as Uint8Array).length % 2 ? conn : authedConn),
    },
    {
      name: 'client request values -> parseRequest -> gate',
      surface: 'client port',
      input: fc.oneof(wild, mutatedValue(VALID_REQUESTS)),
      check: (x) => {
        const req = noThrow('parseRequest', () => parseRequest(x));
        if (isRequestError(req)) return 'refused';
        noThrow('gate.admit (tokens)', () => authedConn.admit(req));
        return noThrow('gate.admit', () => openConn.admit(req)) ? 'refused' : 'accepted';
      },
    },
    {
      name: 'well-typed frames with hostile values, encoded',
      surface: 'client port',
      input: mutatedValue(VALID_REQUESTS).map(encodedOrEmpty),
      check: (b) => clientPipeline(b as Uint8Array, openConn),
    },
    {
      name: 'server frames -> parseServerFrame',
      surface: 'SDK',
      input: fc.oneof(wild, mutatedValue(VALID_SERVER_FRAMES), mutatedBytes(VALID_SERVER_FRAMES.map((f) => encodeFrame(f))).map((b) => decodes(b))),
      check: (x) => ('invalid' in (noThrow('parseServerFrame', () => parseServerFrame(x)) as object) ? 'refused' : 'accepted'),
    },
    {
      name: 'peer handshake frames -> parseHello/Auth/Welcome',
      surface: 'peer port',
      input: fc.oneof(wild, mutatedValue(handshakeValids), mutatedBytes(handshakeValids.map((h) => encodeFrame(h))).map((b) => decodes(b))),
      check: (x) => {
        const parsed = noThrow('handshake parsers', () => [parseHello(x), parseAuth(x), parseWelcome(x)]);
        return parsed.some((p) => p !== null) ? 'accepted' : 'refused';
      },
    },
    {
      name: 'peer frame bytes -> decode -> Raft messages / forwarded requests',
      surface: 'peer port',
      input: mutatedBytes(peerFrames),
      check: (b) => {
        const frame = decodes(b as Uint8Array);
        if (frame instanceof FrameError || typeof frame !== 'object' || frame === null) return 'refused';
        const f = frame as Record<string, unknown>;
        if (f['k'] === 'r' && Array.isArray(f['m'])) {
          const parsed = f['m'].map((m) => noThrow('parseRaftMessage', () => parseRaftMessage(m, 'n1', 'n2')));
          return parsed.every((p) => !('error' in p)) ? 'accepted' : 'refused';
        }
        if (f['k'] === 'a') {
          const p = f['p'] as { req?: unknown } | null;
          const req = noThrow('parseRequest (forwarded)', () => parseRequest(typeof p === 'object' && p !== null ? p.req : p));
          return isRequestError(req) ? 'refused' : 'accepted';
        }
        return 'refused';
      },
    },
    {
      name: 'Raft message values -> parseRaftMessage',
      surface: 'peer port',
      input: fc.oneof(wild, mutatedValue(VALID_RAFT)),
      check: (x) => {
        const parsed = noThrow('parseRaftMessage', () => parseRaftMessage(x, 'n1', 'n2'));
        if ('error' in parsed) return 'refused';
        const again = noThrow('parseRaftMessage (round trip)', () => parseRaftMessage(decodeFrame(encodeFrame(parsed)), 'n1', 'n2'));
        if ('error' in again) throw new ContractBroken(`an accepted message is refused after a round trip: ${again.error}`);
        return 'accepted';
      },
    },
    {
      name: 'log entry bytes -> lockfsm decodeCommand',
      surface: 'lock machine',
      input: fc.oneof(mutatedBytes(VALID_COMMANDS.map((c) => encodeCommand(c))), mutatedValue(VALID_COMMANDS).map(encodedOrEmpty)),
      check: (b) => (isMachineError(noThrow('decodeCommand', () => decodeCommand(b as Uint8Array))) ? 'refused' : 'accepted'),
    },
    {
      name: 'command values -> lockfsm validateCommand',
      surface: 'lock machine',
      input: fc.oneof(wild, mutatedValue(VALID_COMMANDS)),
      check: (x) => (isMachineError(noThrow('validateCommand', () => validateCommand(x, DEFAULT_MACHINE_CONFIG))) ? 'refused' : 'accepted'),
    },
    {
      name: 'snapshot bytes -> LockMachine.restore',
      surface: 'lock machine',
      input: mutatedBytes([snapshot]),
      check: (b) => onlyThrows('LockMachine.restore', (e) => e instanceof SnapshotError, () => LockMachine.restore(b as Uint8Array)),
    },
    {
      name: 'stored values -> storage record decoders',
      surface: 'storage',
      input: fc.tuple(mutatedBytes(storageValids), fc.nat(3)),
      check: (x) => {
        const [b, which] = x as [Uint8Array, number];
        const decoders = [() => decodeHardState(b), () => decodeEntry(7, b), () => decodeMeta(b), () => decodeSnapshotRecord(b)];
        return onlyThrows('storage decoder', (e) => e instanceof CorruptValue, decoders[which]!);
      },
    },
    {
      name: 'config files -> JSON.parse -> validateConfig',
      surface: 'config',
      input: fc.oneof(
        mutatedValue(VALID_CONFIGS).map(jsonText),
        fc.tuple(fc.constantFrom(...configTexts), fc.nat(), fc.nat(6), fc.string({ maxLength: 6 })).map(([t, at, cut, insert]) => {
          const i = at % (t.length + 1);
          return t.slice(0, i) + insert + t.slice(i + cut);
        }),
        fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      ),
      check: (text) => {
        let raw: unknown;
        try {
          raw = JSON.parse(text as string);
        } catch {
          return 'refused'; // loadConfig: ConfigError "(file) is not valid JSON"
        }
        return onlyThrows('validateConfig', (e) => e instanceof ConfigError, () => validateConfig(raw, '/tmp'));
      },
    },
  ];
}

/** The figures of one target's run. */
export interface FuzzStats {
  readonly target: string;
  readonly surface: string;
  readonly inputs: number;
  readonly accepted: number;
  readonly refused: number;
  readonly maxMs: number;
  readonly totalMs: number;
  readonly failure: string | null;
}

/** Run one target for `numRuns` inputs; a broken contract is reported with its seed and input. */
export function runTarget(t: FuzzTarget, numRuns: number, seed: number): FuzzStats {
  let accepted = 0;
  let refused = 0;
  let maxMs = 0;
  let totalMs = 0;
  const details = fc.check(
    fc.property(t.input, (x) => {
      const started = performance.now();
      const outcome = t.check(x);
      const ms = performance.now() - started;
      totalMs += ms;
      if (ms > maxMs) maxMs = ms;
      if (outcome === 'accepted') accepted++;
      else refused++;
    }),
    { numRuns, seed, endOnFailure: true },
  );
  const failure = details.failed ? fc.defaultReportMessage(details) ?? 'failed' : null;
  return { target: t.name, surface: t.surface, inputs: details.numRuns, accepted, refused, maxMs, totalMs, failure };
}
