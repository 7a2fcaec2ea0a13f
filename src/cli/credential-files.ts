// `palisade secret add|use|remove` and `palisade token add|retire|remove`: the edits of a
// config file that rotate the cluster secret and the client tokens (docs/operations.md,
// "Rotating the cluster secret", "Rotating client tokens"). Each reads the file, makes its
// change, checks the result as `palisade serve` would (an edit never leaves a file a node
// refuses), and replaces the file atomically, keeping its mode and owner. Secrets are never
// printed; a new token is printed once, on stdout, for the client that will use it. The nodes
// take the file on `systemctl reload` (SIGHUP).
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { writeFileAtomically } from '../backup/file.js';
import { MAX_SECRETS, validateConfig } from '../config/cluster-config.js';
import { UsageError } from './exit-codes.js';

type Raw = Record<string, unknown>;
interface RawToken {
  name: string;
  token: string;
  prefixes?: string[];
  readOnly?: boolean;
  admin?: boolean;
}

/** Reads `path`, applies `change` to its JSON, checks and writes the result; returns what
 *  `change` returned. Nothing is written when the change or the check fails. */
async function editConfig<T>(path: string, change: (raw: Raw) => T): Promise<T> {
  let raw: Raw;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as Raw;
  } catch (e) {
    throw new UsageError(`cannot read the config ${path}: ${(e as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new UsageError(`${path} does not hold a JSON object`);
  const out = change(raw);
  validateConfig(raw, dirname(resolve(path))); // throws a ConfigError naming the field
  const st = statSync(path);
  await writeFileAtomically(path, Buffer.from(`${JSON.stringify(raw, null, 2)}\n`), { mode: st.mode, uid: st.uid, gid: st.gid });
  return out;
}

/** `raw` with the keys `drop` taken out and `put` written where the first of them was (at the
 *  end when none was there), so the file keeps its order. */
function replaceKeys(raw: Raw, drop: readonly string[], put: Raw): void {
  const entries = Object.entries(raw);
  const at = entries.findIndex(([k]) => drop.includes(k));
  const kept = entries.filter(([k]) => !drop.includes(k));
  const index = at < 0 ? kept.length : entries.slice(0, at).filter(([k]) => !drop.includes(k)).length;
  kept.splice(index, 0, ...Object.entries(put));
  for (const k of Object.keys(raw)) delete raw[k];
  Object.assign(raw, Object.fromEntries(kept));
}

// ---- secrets -------------------------------------------------------------------------------

function secretsOf(raw: Raw): string[] {
  const one = typeof raw.secret === 'string' ? [raw.secret] : [];
  const more = Array.isArray(raw.secrets) ? raw.secrets.filter((s): s is string => typeof s === 'string') : [];
  return [...one, ...more];
}

/** One secret is written as `secret`, several as `secrets` (the first proved, all accepted). */
function setSecrets(raw: Raw, list: readonly string[]): void {
  replaceKeys(raw, ['secret', 'secrets'], list.length === 1 ? { secret: list[0] } : { secrets: [...list] });
}

/** A value read from a file (`-`: stdin), its last newline dropped; or a fresh random one. */
function valueFrom(file: string | undefined, fresh: () => string): string {
  if (file === undefined) return fresh();
  const text = readFileSync(file === '-' ? 0 : file, 'utf8');
  return text.replace(/\r?\n$/, '');
}

export async function secretAdd(o: { config: string; from?: string }): Promise<string> {
  return editConfig(o.config, (raw) => {
    const list = secretsOf(raw);
    const secret = valueFrom(o.from, () => randomBytes(32).toString('base64'));
    if (list.includes(secret)) throw new UsageError('the config already holds this secret');
    if (list.length >= MAX_SECRETS) throw new UsageError(`the config holds ${list.length} secrets already (at most ${MAX_SECRETS}): finish the rotation under way (palisade secret use, then remove)`);
    setSecrets(raw, [...list, secret]);
    return `${o.config}: ${list.length + 1} secrets; a node reloaded with this file accepts the new one and still proves the first (next, once every node has it: palisade secret use)`;
  });
}

export async function secretUse(o: { config: string }): Promise<string> {
  return editConfig(o.config, (raw) => {
    const list = secretsOf(raw);
    if (list.length < 2) throw new UsageError('the config holds one secret: add the new one first (palisade secret add)');
    setSecrets(raw, [list.at(-1)!, ...list.slice(0, -1)]);
    return `${o.config}: the newest secret is now first; a node reloaded with this file proves it and still accepts the others (next, once every node has it: palisade secret remove)`;
  });
}

export async function secretRemove(o: { config: string }): Promise<string> {
  return editConfig(o.config, (raw) => {
    const list = secretsOf(raw);
    if (list.length < 2) throw new UsageError('the config holds one secret: there is nothing to remove');
    setSecrets(raw, list.slice(0, 1));
    return `${o.config}: only the first secret is left; a node reloaded with this file refuses peers that prove another`;
  });
}

// ---- tokens --------------------------------------------------------------------------------

function tokensOf(raw: Raw): RawToken[] {
  const auth = raw.auth as { tokens?: unknown } | undefined;
  return Array.isArray(auth?.tokens) ? (auth.tokens as RawToken[]) : [];
}

function setTokens(raw: Raw, tokens: RawToken[]): void {
  replaceKeys(raw, ['auth'], { auth: { ...(raw.auth as Raw | undefined), tokens } });
}

export interface TokenAddOptions {
  readonly config: string;
  readonly from?: string;
  readonly prefixes?: string;
  readonly readOnly?: boolean;
  readonly admin?: boolean;
}

/** Adds a token of `name`: a second one of an existing name (with its rights: a rotation), or
 *  the first of a new name. Returns the token and what was done. */
export async function tokenAdd(name: string, o: TokenAddOptions): Promise<{ token: string; said: string }> {
  return editConfig(o.config, (raw) => {
    const tokens = tokensOf(raw);
    const token = valueFrom(o.from, () => randomBytes(24).toString('hex'));
    const last = tokens.map((t) => t.name).lastIndexOf(name);
    const rightsGiven = o.prefixes !== undefined || o.readOnly !== undefined || o.admin !== undefined;
    if (last >= 0 && rightsGiven) throw new UsageError(`"${name}" has a token already: its new token gets the same rights (give no --prefixes, --read-only or --admin)`);
    // A second token of a name copies the rights of its newest one (the config requires equal rights).
    const { name: _name, token: _value, ...rights } = last >= 0 ? tokens[last]! : { name, token, ...(o.prefixes !== undefined ? { prefixes: o.prefixes.split(',') } : {}), ...(o.readOnly ? { readOnly: true } : {}), ...(o.admin ? { admin: true } : {}) };
    const entry: RawToken = { name, token, ...rights };
    tokens.splice(last >= 0 ? last + 1 : tokens.length, 0, entry);
    setTokens(raw, tokens);
    const said =
      last >= 0
        ? `${o.config}: a second token of "${name}"; a node reloaded with this file accepts both, as one identity (next: give the client the new token, then palisade token retire ${name})`
        : `${o.config}: a token "${name}"; a node reloaded with this file accepts it`;
    return { token, said };
  });
}

export async function tokenRetire(name: string, o: { config: string }): Promise<string> {
  return editConfig(o.config, (raw) => {
    const tokens = tokensOf(raw);
    const mine = tokens.filter((t) => t.name === name);
    if (mine.length < 2) throw new UsageError(`"${name}" has ${mine.length === 0 ? 'no token' : 'one token'}: there is no older token to retire (palisade token add ${name} makes a new one)`);
    const newest = mine.at(-1)!;
    setTokens(raw, tokens.filter((t) => t.name !== name || t === newest));
    return `${o.config}: only the newest token of "${name}" is left; a node reloaded with this file closes the connections of the others`;
  });
}

export async function tokenRemove(name: string, o: { config: string }): Promise<string> {
  return editConfig(o.config, (raw) => {
    const tokens = tokensOf(raw);
    const left = tokens.filter((t) => t.name !== name);
    if (left.length === tokens.length) throw new UsageError(`the config has no token "${name}"`);
    if (left.length === 0) throw new UsageError(`"${name}" holds the config's only tokens: authentication needs at least one (turning it off, by removing "auth", needs a restart)`);
    setTokens(raw, left);
    return `${o.config}: "${name}" removed; a node reloaded with this file closes its connections, and its sessions end when their leases run out`;
  });
}
