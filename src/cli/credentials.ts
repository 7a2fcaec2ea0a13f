// The CLI's credentials: a bearer token and TLS files, from --token/--ca/--cert/--key or
// PALISADE_TOKEN/PALISADE_CA/PALISADE_CERT/PALISADE_KEY, given to every command that talks
// to a cluster. One command runs per process, so they are set once, before its action, and
// read by the helpers that connect (rpc calls and LockClient.connect).
import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { ClientTlsOptions, LockClientOptions } from '../client/index.js';
import type { ClusterConfig } from '../config/cluster-config.js';
import type { RpcCredentials } from '../protocol/rpc.js';

export interface CliCredentials {
  readonly token?: string;
  readonly tls?: ClientTlsOptions;
}

export interface CredentialFlags {
  readonly token?: string;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

let current: CliCredentials = {};

/** Commands that never talk to a cluster as a client. */
const NOT_CLIENT_COMMANDS = new Set(['serve', 'cluster', 'fence-sql', 'help', 'inspect', 'restore', 'recover']);
/** Groups whose every command edits a config file and talks to no cluster. */
const FILE_COMMAND_GROUPS = new Set(['secret', 'token']);
const isClientCommand = (cmd: Command): boolean => !NOT_CLIENT_COMMANDS.has(cmd.name()) && !FILE_COMMAND_GROUPS.has(cmd.parent?.name() ?? '');

/**
 * Add --token, --ca, --cert and --key to every client command (leaf commands other than
 * serve and cluster), and load them before the command's action runs.
 */
export function registerCredentialOptions(program: Command): void {
  const visit = (cmd: Command): void => {
    if (cmd.commands.length > 0) {
      cmd.commands.forEach(visit);
      return;
    }
    if (!isClientCommand(cmd)) return;
    cmd.addOption(new Option('--token <token>', 'bearer token for a cluster that requires one (prefer $PALISADE_TOKEN: arguments show in ps)'));
    cmd.addOption(new Option('--ca <file>', 'CA certificate (PEM) that signs the nodes\' certificates, for wss:// endpoints (or $PALISADE_CA)'));
    cmd.addOption(new Option('--cert <file>', 'client certificate (PEM), for nodes that require one (or $PALISADE_CERT)'));
    cmd.addOption(new Option('--key <file>', 'key of --cert (PEM) (or $PALISADE_KEY)'));
  };
  program.commands.forEach(visit);
  program.hook('preAction', (_root, action) => {
    if (isClientCommand(action)) current = credentialsFrom(action.opts<CredentialFlags>(), process.env);
  });
}

/** Flags first, then the environment; files are read now so a bad path fails at once. */
export function credentialsFrom(flags: CredentialFlags, env: NodeJS.ProcessEnv): CliCredentials {
  const token = flags.token ?? nonEmpty(env.PALISADE_TOKEN);
  const file = (path: string | undefined, flag: string, envName: string, what: string): string | undefined => {
    path ??= nonEmpty(env[envName]);
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      throw new Error(`cannot read the ${what} ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}) — check ${flag} or $${envName}`);
    }
  };
  const ca = file(flags.ca, '--ca', 'PALISADE_CA', 'CA certificate');
  const cert = file(flags.cert, '--cert', 'PALISADE_CERT', 'client certificate');
  const key = file(flags.key, '--key', 'PALISADE_KEY', 'client key');
  if ((cert === undefined) !== (key === undefined)) throw new Error('--cert and --key (or $PALISADE_CERT and $PALISADE_KEY) go together');
  const tls = ca || cert ? { ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) } : undefined;
  return { ...(token !== undefined ? { token } : {}), ...(tls ? { tls } : {}) };
}

/** What `palisade cluster` uses to watch the nodes it started: the config's first token
 *  (unless one is given) and the client port's CA and, when required, a node's certificate. */
export function credentialsForConfig(cfg: ClusterConfig, env: NodeJS.ProcessEnv): CliCredentials {
  const { token } = credentialsFrom({}, env);
  return fromConfig(cfg, cfg.nodes[0]!.id, token !== undefined ? { token } : {}, cfg.auth?.tokens[0]?.token);
}

/** What `palisade serve --join` presents to the cluster it joins (members, addMember): the
 *  token and files given (--token/--ca/--cert/--key or $PALISADE_*), else what the config it
 *  shares with the cluster has: its first admin token (addMember needs one), the client
 *  port's CA, and this node's own certificate when the client port requires one. */
export function joinCredentials(cfg: ClusterConfig, selfId: string, flags: CredentialFlags, env: NodeJS.ProcessEnv): RpcCredentials {
  const given = credentialsFrom(flags, env);
  return rpcCredentials(fromConfig(cfg, selfId, given, cfg.auth?.tokens.find((t) => t.admin)?.token));
}

function fromConfig(cfg: ClusterConfig, id: string, given: CliCredentials, configToken: string | undefined): CliCredentials {
  const token = given.token ?? configToken;
  const t = cfg.tls.client;
  const read = (path: string): string => readFileSync(path.replaceAll('{id}', id), 'utf8');
  const tls = given.tls ?? (t ? { ...(t.ca ? { ca: read(t.ca) } : {}), ...(t.requireClientCert ? { cert: read(t.cert), key: read(t.key) } : {}) } : undefined);
  return { ...(token !== undefined ? { token } : {}), ...(tls ? { tls } : {}) };
}

/** For one-shot requests (src/protocol/rpc.ts). */
export function rpcCredentials(c: CliCredentials = current): RpcCredentials {
  const tls = c.tls ?? {};
  return {
    ...(c.token !== undefined ? { token: c.token } : {}),
    ...(tls.ca !== undefined ? { ca: pem(tls.ca) } : {}),
    ...(tls.cert !== undefined ? { cert: pem(tls.cert) } : {}),
    ...(tls.key !== undefined ? { key: pem(tls.key) } : {}),
  };
}

/** For LockClient.connect. */
export function sdkCredentials(c: CliCredentials = current): Pick<LockClientOptions, 'authToken' | 'tls'> {
  return { ...(c.token !== undefined ? { authToken: c.token } : {}), ...(c.tls ? { tls: c.tls } : {}) };
}

/** A failure in plain words, with what to check when it is about credentials or TLS. */
export function explainFailure(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  const detail = causeChain(e);
  if (code === 'UNAUTHENTICATED') {
    // The node's own words are about the protocol (hello); these are about the command line,
    // which knows whether it sent a token at all.
    return current.token === undefined
      ? 'the cluster requires a token: UNAUTHENTICATED — give --token or set PALISADE_TOKEN'
      : 'the cluster refused the token: UNAUTHENTICATED — check --token or PALISADE_TOKEN';
  }
  if (code === 'PERMISSION_DENIED') return `the cluster refused this for the token: PERMISSION_DENIED (${message}) — the token's prefixes, read-only or admin setting do not allow it`;
  if (/certificate|self[- ]signed|unable to verify|altnames/i.test(detail)) {
    return `cannot verify the node's TLS certificate (${message}) — check --ca or PALISADE_CA`;
  }
  if (/ERR_SSL|EPROTO|wrong version number|SSL routines/i.test(detail)) {
    return `the TLS handshake failed (${message}) — check ws:// versus wss:// in the endpoints, and --cert/--key if the nodes require a client certificate`;
  }
  if (/TOO_MANY_CONNECTIONS/.test(detail)) return `${message} — this address has too many connections open to the node`;
  return message;
}

function causeChain(e: unknown): string {
  const parts: string[] = [];
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 5; x = x.cause, depth++) parts.push(x.message);
  return parts.join(' | ');
}

function pem(x: string | Uint8Array): string | Buffer {
  return typeof x === 'string' ? x : Buffer.from(x);
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}
