// `palisade kv put|get|delete|watch` (with `palisade put` and `palisade watch` as
// top-level aliases): the cluster's small key-value space from the shell.
//
// A fenced write is made by the session that holds the lock: the cluster checks that *this
// session* holds the lock with the token, not merely that someone presents the token. So a
// token printed by another process (PALISADE_FENCING_TOKEN of `palisade lock`) cannot fence
// a write made here; `--lock NAME` takes the lock for the write, fences the write with it,
// and releases it.
import { KV_EXIT } from './exit-codes.js';
import {
  ConflictError,
  FencedError,
  InvalidArgumentError,
  LockClient,
  LockLostError,
  LockTimeoutError,
  TimeoutError,
  type KvChange,
  type WriteOptions,
} from '../client/index.js';
import { explainFailure, sdkCredentials } from './credentials.js';
import { exitCodeFor, unavailableText } from './failure.js';
import { Interrupts, interrupted } from './interrupt.js';
import { printable, printableMessage, safeJson } from './terminal-text.js';

export { KV_EXIT };

export interface KvWriteOptions {
  endpoints: string[];
  lock?: string;
  wait?: number;
  ifRevision?: number;
  ttl?: number;
  json?: boolean;
}

function say(msg: string): void {
  process.stderr.write(`palisade: ${printableMessage(msg)}\n`);
}

/** The guard installed by connect(): one command runs per process, and it stays installed
 *  until the process exits, so Ctrl-C at any phase closes the session first. */
let guard: Interrupts | null = null;

async function connect(endpoints: string[], ttlMs?: number): Promise<LockClient | number> {
  guard = Interrupts.install();
  try {
    return await guard.session(LockClient.connect({ endpoints, ...sdkCredentials(), failWhenAllRefuse: true, ...(ttlMs !== undefined ? { ttlMs } : {}) }));
  } catch (e) {
    if (interrupted()) return 1;
    say(`cannot reach the cluster: ${await unavailableText(e, endpoints)}`);
    return exitCodeFor(e);
  }
}

/** The exit code for a failed write, after saying why. */
function writeFailure(e: unknown, what: string): number {
  if (interrupted()) return 1;
  const message = (e as Error).message;
  if (e instanceof ConflictError) {
    say(`${what} not applied: ${message}`);
    return KV_EXIT.CONFLICT;
  }
  if (e instanceof LockLostError || e instanceof FencedError) {
    say(`${what} refused: ${message}`);
    return KV_EXIT.FENCED;
  }
  if (e instanceof LockTimeoutError) {
    say(message);
    return KV_EXIT.WAIT_TIMEOUT;
  }
  if (e instanceof InvalidArgumentError) {
    say(`${what}: ${message}`);
    return KV_EXIT.USAGE;
  }
  if (e instanceof TimeoutError) {
    say(`${what}: ${message} (it may or may not have applied)`);
    return KV_EXIT.UNAVAILABLE;
  }
  say(`${what} failed: ${explainFailure(e)}`);
  return exitCodeFor(e);
}

/** Runs `write` fenced by --lock (taken for the write, then released), or unfenced. */
async function withOptionalLock<T>(client: LockClient, o: KvWriteOptions, write: (options: WriteOptions) => Promise<T>): Promise<{ result: T; token: number | null }> {
  const ifRevision = o.ifRevision === undefined ? {} : { ifRevision: o.ifRevision };
  if (o.lock === undefined) return { result: await write(ifRevision), token: null };
  const lock = await client.acquire(o.lock, o.wait === undefined ? {} : { waitMs: o.wait });
  try {
    return { result: await write({ ...ifRevision, fence: lock }), token: lock.token };
  } finally {
    await lock.release().catch(() => {});
  }
}

export async function kvPutCommand(key: string, value: string, o: KvWriteOptions): Promise<number> {
  const client = await connect(o.endpoints, o.ttl);
  if (typeof client === 'number') return client;
  try {
    const { result, token } = await withOptionalLock(client, o, (options) => client.put(key, value, options));
    const { revision } = result;
    if (o.json) {
      process.stdout.write(`${safeJson({ key, revision, ...(o.lock !== undefined ? { lock: o.lock, token } : {}) }, 0)}\n`);
    } else {
      process.stdout.write(`${printable(key)}: revision ${revision}${o.lock !== undefined ? ` (fenced by ${printable(o.lock)} with token ${token})` : ''}\n`);
    }
    return 0;
  } catch (e) {
    return writeFailure(e, `put ${key}`);
  } finally {
    await client.close().catch(() => {});
  }
}

export async function kvDeleteCommand(key: string, o: KvWriteOptions): Promise<number> {
  const client = await connect(o.endpoints, o.ttl);
  if (typeof client === 'number') return client;
  try {
    const { result: r } = await withOptionalLock(client, o, (options) => client.delete(key, options));
    if (o.json) process.stdout.write(`${safeJson({ key, existed: r.existed, revision: r.revision }, 0)}\n`);
    else process.stdout.write(r.existed ? `${printable(key)}: deleted at revision ${r.revision}\n` : `${printable(key)}: did not exist\n`);
    return 0;
  } catch (e) {
    return writeFailure(e, `delete ${key}`);
  } finally {
    await client.close().catch(() => {});
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A value for JSON output: text when it is valid UTF-8, else base64. */
function jsonValue(bytes: Uint8Array): { value: string } | { valueBase64: string } {
  try {
    return { value: strictUtf8.decode(bytes) };
  } catch {
    return { valueBase64: Buffer.from(bytes).toString('base64') };
  }
}

export async function kvGetCommand(key: string, o: { endpoints: string[]; json?: boolean }): Promise<number> {
  const client = await connect(o.endpoints);
  if (typeof client === 'number') return client;
  try {
    const entry = await client.kvGet(key);
    if (entry === null) {
      if (o.json) process.stdout.write('null\n');
      else say(`${key}: not found`);
      return KV_EXIT.NOT_FOUND;
    }
    if (o.json) {
      process.stdout.write(`${safeJson({ key, ...jsonValue(entry.value), revision: entry.revision }, 0)}\n`);
    } else if (process.stdout.isTTY === true) {
      // On a terminal the value is shown, its control bytes escaped; into a pipe or a file
      // it goes as the bytes it is.
      process.stdout.write(`${printable(Buffer.from(entry.value).toString('utf8'))}\n`);
    } else {
      process.stdout.write(Buffer.from(entry.value));
      process.stdout.write('\n');
    }
    return 0;
  } catch (e) {
    say(`get ${key} failed: ${explainFailure(e)}`);
    return exitCodeFor(e);
  } finally {
    await client.close().catch(() => {});
  }
}

/** One watch line: `put KEY REVISION "VALUE"` / `delete KEY REVISION`, or JSON. */
export function formatChange(ch: KvChange, json: boolean): string {
  if (json) {
    return safeJson(
      ch.value === null
        ? { type: 'delete', key: ch.key, revision: ch.revision }
        : { type: 'put', key: ch.key, ...jsonValue(ch.value), revision: ch.revision },
      0,
    );
  }
  if (ch.value === null) return `delete ${printable(ch.key)} ${ch.revision}`;
  const v = jsonValue(ch.value);
  return `put ${printable(ch.key)} ${ch.revision} ${'value' in v ? safeJson(v.value, 0) : `base64:${v.valueBase64}`}`;
}

export async function kvWatchCommand(prefix: string, o: { endpoints: string[]; json?: boolean; includeExisting?: boolean }): Promise<number> {
  const client = await connect(o.endpoints);
  if (typeof client === 'number') return client;
  const watch = client.watch(prefix, { includeExisting: o.includeExisting === true });
  // The watch runs until Ctrl-C: the signal ends it, and the command ends with 0.
  guard?.handOver(() => watch.close());
  try {
    void watch.ready.then(
      () => say(`watching ${prefix === '' ? 'every key' : JSON.stringify(prefix)}`),
      () => {},
    );
    for await (const ch of watch) process.stdout.write(`${formatChange(ch, o.json === true)}\n`);
    return 0;
  } catch (e) {
    say(`watch ${JSON.stringify(prefix)} failed: ${explainFailure(e)}`);
    return exitCodeFor(e);
  } finally {
    guard?.handOver(null);
    await client.close().catch(() => {});
  }
}
