// `palisade kv put|get|delete|watch` (with `palisade put` and `palisade watch` as
// top-level aliases): the cluster's small key-value space from the shell.
//
// A fenced write is made by the session that holds the lock: the cluster checks that *this
// session* holds the lock with the token, not merely that someone presents the token. So a
// token printed by another process (PALISADE_FENCING_TOKEN of `palisade lock`) cannot fence
// a write made here; `--lock NAME` takes the lock for the write, fences the write with it,
// and releases it.
import { Command, InvalidArgumentError as UsageError } from 'commander';
import { endpointsOption } from './options.js';
import {
  ConflictError,
  FencedError,
  InvalidArgumentError,
  LockClient,
  LockLostError,
  LockTimeoutError,
  TimeoutError,
  UnavailableError,
  type KvChange,
  type WriteOptions,
} from '../client/index.js';
import { explainFailure, sdkCredentials } from './credentials.js';

/** Exit codes of the kv commands besides 0 (success) and 1 (any other failure). */
export const KV_EXIT = {
  /** `kv get`: no such key. */
  NOT_FOUND: 1,
  /** --if-revision did not match. */
  CONFLICT: 65,
  /** The cluster could not be reached or did not answer in time. */
  UNAVAILABLE: 69,
  /** --lock was not acquired within --wait. */
  WAIT_TIMEOUT: 74,
  /** The lock was lost before the fenced write applied (the cluster refused the token). */
  FENCED: 75,
  USAGE: 64,
} as const;

export interface KvWriteOptions {
  endpoints: string[];
  lock?: string;
  wait?: number;
  ifRevision?: number;
  ttl?: number;
  json?: boolean;
}

function say(msg: string): void {
  process.stderr.write(`palisade: ${msg}\n`);
}

async function connect(endpoints: string[], ttlMs?: number): Promise<LockClient | number> {
  try {
    return await LockClient.connect({ endpoints, ...sdkCredentials(), ...(ttlMs !== undefined ? { ttlMs } : {}) });
  } catch (e) {
    say(`cannot reach the cluster: ${explainFailure(e)}`);
    return e instanceof InvalidArgumentError ? KV_EXIT.USAGE : KV_EXIT.UNAVAILABLE;
  }
}

/** The exit code for a failed write, after saying why. */
function writeFailure(e: unknown, what: string): number {
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
  return e instanceof UnavailableError ? KV_EXIT.UNAVAILABLE : 1;
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
      process.stdout.write(`${JSON.stringify({ key, revision, ...(o.lock !== undefined ? { lock: o.lock, token } : {}) })}\n`);
    } else {
      process.stdout.write(`${key}: revision ${revision}${o.lock !== undefined ? ` (fenced by ${o.lock} with token ${token})` : ''}\n`);
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
    if (o.json) process.stdout.write(`${JSON.stringify({ key, existed: r.existed, revision: r.revision })}\n`);
    else process.stdout.write(r.existed ? `${key}: deleted at revision ${r.revision}\n` : `${key}: did not exist\n`);
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
      process.stdout.write(`${JSON.stringify({ key, ...jsonValue(entry.value), revision: entry.revision })}\n`);
    } else {
      process.stdout.write(Buffer.from(entry.value));
      process.stdout.write('\n');
    }
    return 0;
  } catch (e) {
    say(`get ${key} failed: ${explainFailure(e)}`);
    return e instanceof UnavailableError || e instanceof TimeoutError ? KV_EXIT.UNAVAILABLE : 1;
  } finally {
    await client.close().catch(() => {});
  }
}

/** One watch line: `put KEY REVISION "VALUE"` / `delete KEY REVISION`, or JSON. */
export function formatChange(ch: KvChange, json: boolean): string {
  if (json) {
    return JSON.stringify(
      ch.value === null
        ? { type: 'delete', key: ch.key, revision: ch.revision }
        : { type: 'put', key: ch.key, ...jsonValue(ch.value), revision: ch.revision },
    );
  }
  if (ch.value === null) return `delete ${ch.key} ${ch.revision}`;
  const v = jsonValue(ch.value);
  return `put ${ch.key} ${ch.revision} ${'value' in v ? JSON.stringify(v.value) : `base64:${v.valueBase64}`}`;
}

export async function kvWatchCommand(prefix: string, o: { endpoints: string[]; json?: boolean; includeExisting?: boolean }): Promise<number> {
  const client = await connect(o.endpoints);
  if (typeof client === 'number') return client;
  const watch = client.watch(prefix, { includeExisting: o.includeExisting === true });
  const stop = (): void => watch.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    void watch.ready.then(
      () => say(`watching ${prefix === '' ? 'every key' : JSON.stringify(prefix)}`),
      () => {},
    );
    for await (const ch of watch) process.stdout.write(`${formatChange(ch, o.json === true)}\n`);
    return 0;
  } catch (e) {
    say(`watch ${JSON.stringify(prefix)} failed: ${explainFailure(e)}`);
    return e instanceof UnavailableError || e instanceof TimeoutError ? KV_EXIT.UNAVAILABLE : 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await client.close().catch(() => {});
  }
}

// ---- registration -------------------------------------------------------------------------

type EndpointsFrom = (opt: string | undefined) => string[];

function int(min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`must be a whole number >= ${min}`);
    return n;
  };
}

const EXIT_HELP = `
Exit status: 0 done; ${KV_EXIT.CONFLICT} --if-revision did not match; ${KV_EXIT.FENCED} the lock was lost before
the write applied (refused by the cluster); ${KV_EXIT.WAIT_TIMEOUT} --lock not acquired within --wait;
${KV_EXIT.UNAVAILABLE} cluster unreachable (or no answer in time: the write may have applied); ${KV_EXIT.USAGE} usage.

A fenced write must come from the session that holds the lock, so --lock takes the lock for
this one write (waiting in line for it, up to --wait), fences the write with it and
releases it. A token printed by another process cannot fence a write made here.`;

interface WriteFlags {
  endpoints?: string;
  lock?: string;
  wait?: number;
  ifRevision?: number;
  json?: boolean;
}

function writeOptions(cmd: Command): Command {
  return cmd
    .addOption(endpointsOption())
    .option('--lock <name>', 'take this lock and apply the write only while it is held (fenced by its token)')
    .option('--wait <ms>', 'with --lock: give up if it is not acquired within this many ms', int(0))
    .option('--if-revision <r>', "apply only if the key's revision is r (0: only if the key does not exist)", int(0))
    .option('--json', 'print JSON');
}

function definePut(cmd: Command, endpointsFrom: EndpointsFrom): Command {
  return writeOptions(
    cmd
      .description('write a key of the key-value space (optionally fenced by a lock, or conditional on its revision)')
      .argument('<key>', 'the key')
      .argument('<value>', 'the value (UTF-8 text; use -- before a value that starts with -)'),
  )
    .addHelpText('after', `${EXIT_HELP}\n\nExample: palisade put jobs/report/checkpoint '{"page":12}' --lock jobs/report --wait 5000`)
    .action(async (key: string, value: string, o: WriteFlags) => {
      process.exitCode = await kvPutCommand(key, value, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
}

function defineWatch(cmd: Command, endpointsFrom: EndpointsFrom): Command {
  return cmd
    .description('print every change to keys under a prefix, one line each, until Ctrl-C')
    .argument('<prefix>', 'key prefix ("" for every key)')
    .addOption(endpointsOption())
    .option('--json', 'print JSON lines: {"type":"put"|"delete","key","value"|"valueBase64","revision"}')
    .option('--include-existing', 'first print the keys that exist now')
    .addHelpText(
      'after',
      `
Lines: put KEY REVISION "VALUE" (a JSON string; base64:... for bytes that are not UTF-8),
or delete KEY REVISION. "watching PREFIX" goes to stderr once the cluster has the watch.
After a reconnect the prefix is re-read, so no change is missed; a deletion seen only then
has revision 0.`,
    )
    .action(async (prefix: string, o: { endpoints?: string; json?: boolean; includeExisting?: boolean }) => {
      process.exitCode = await kvWatchCommand(prefix, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
}

/** Adds `kv put|get|delete|watch` and the top-level aliases `put` and `watch`. */
export function registerKvCommands(program: Command, endpointsFrom: EndpointsFrom): void {
  const kv = program
    .command('kv')
    .description('the key-value space: put, get, delete, watch (palisade put / watch are short for kv put / watch)')
    .addHelpText('after', '\n`palisade get NAME` shows a lock; `palisade kv get KEY` reads a key.');
  definePut(kv.command('put'), endpointsFrom);
  kv.command('get')
    .description('print the value of a key (a linearizable read)')
    .argument('<key>', 'the key')
    .addOption(endpointsOption())
    .option('--json', 'print {"key","value"|"valueBase64","revision"}, or null')
    .addHelpText('after', `\nExit status: 0 found; ${KV_EXIT.NOT_FOUND} no such key; ${KV_EXIT.UNAVAILABLE} cluster unreachable.`)
    .action(async (key: string, o: { endpoints?: string; json?: boolean }) => {
      process.exitCode = await kvGetCommand(key, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
  writeOptions(kv.command('delete').description('delete a key (optionally fenced by a lock, or conditional on its revision)').argument('<key>', 'the key'))
    .addHelpText('after', EXIT_HELP)
    .action(async (key: string, o: WriteFlags) => {
      process.exitCode = await kvDeleteCommand(key, { ...o, endpoints: endpointsFrom(o.endpoints) });
    });
  defineWatch(kv.command('watch'), endpointsFrom);

  definePut(program.command('put'), endpointsFrom);
  defineWatch(program.command('watch'), endpointsFrom);
}
