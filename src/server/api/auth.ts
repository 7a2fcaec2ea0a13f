// Who a client is and what it may touch. A client proves itself with a bearer token in
// `hello`; the token's entry in the config says which names it may use (prefixes) and
// whether it may change anything (readOnly). docs/security.md explains the model and what
// it does not cover (sessions are capabilities: see there).
import { timingSafeEqual } from 'node:crypto';
import type { Request, ServerEvent, WireError } from '../../protocol/client-protocol.js';
import { permissionOf } from '../../protocol/ops.js';
import type { TokenConfig } from '../../config/cluster-config.js';
import type { MachineView } from './limits.js';
import { nodeProof, tokenDigest, tokenIdOf } from '../../protocol/node-proof.js';

/** An authenticated client identity: a token's name and its rights, never the token. */
export interface Principal {
  readonly name: string;
  /** Names must start with one of these; null = every name. */
  readonly prefixes: readonly string[] | null;
  readonly readOnly: boolean;
  readonly admin: boolean;
}

/** Every client, when the config has no `auth` section. */
export const UNAUTHENTICATED_CLIENT: Principal = Object.freeze({ name: '(auth off)', prefixes: null, readOnly: false, admin: true });

/** What a registry keeps of a token, and what a connection keeps of the token it presented
 *  (src/protocol/node-proof.ts). */
export { tokenDigest };

/** The configured tokens, kept only as digests. Two tokens may share a name (a rotation):
 *  they are one principal. */
export class TokenRegistry {
  private readonly entries: readonly { readonly digest: Buffer; readonly id: Buffer; readonly principal: Principal }[];

  constructor(tokens: readonly TokenConfig[]) {
    this.entries = tokens.map((t) => ({
      digest: tokenDigest(t.token),
      id: tokenIdOf(tokenDigest(t.token)),
      principal: Object.freeze({
        name: t.name,
        prefixes: t.prefixes ? Object.freeze([...t.prefixes]) : null,
        readOnly: t.readOnly,
        admin: t.admin,
      }),
    }));
  }

  /**
   * The principal whose token this is, or null. Both sides are hashed first so that the
   * comparison is over equal lengths, and every entry is compared whatever matches, so the
   * time taken says nothing about how close a guess came or which token it was near.
   */
  authenticate(presented: string | undefined): Principal | null {
    return presented === undefined ? null : this.principalOf(tokenDigest(presented));
  }

  /** The principal of the token with this digest, or null (compared as authenticate says). */
  principalOf(digest: Buffer): Principal | null {
    let found: Principal | null = null;
    for (const e of this.entries) {
      if (timingSafeEqual(e.digest, digest)) found = e.principal;
    }
    return found;
  }

  /**
   * The answer to a challenge hello (src/protocol/node-proof.ts): the proof that this node holds the digest
   * of the token `tokenId` names, for this node's `clientUrl` in `clusterId`; null when no
   * token has that id. Every entry is compared, as in authenticate.
   */
  prove(tokenId: Uint8Array, nonce: Uint8Array, clusterId: string, clientUrl: string): Buffer | null {
    let digest: Buffer | null = null;
    for (const e of this.entries) {
      if (e.id.length === tokenId.length && timingSafeEqual(e.id, tokenId)) digest = e.digest;
    }
    return digest && nodeProof(digest, clusterId, clientUrl, nonce);
  }
}

/** A name the request touches, or the prefix of a listing it asks for. */
export interface TouchedName {
  readonly what: 'lock' | 'election' | 'key' | 'opKey' | 'fence lock';
  readonly name: string;
  /** A listing or subscription by prefix: the prefix itself must lie within the token's. */
  readonly isPrefix: boolean;
}

/** Every name a request touches: what a token's prefixes restrict. */
export function touchedNames(req: Request): TouchedName[] {
  const one = (what: TouchedName['what'], name: string, isPrefix = false): TouchedName => ({ what, name, isPrefix });
  const fence = (f: { lock: string } | undefined): TouchedName[] => (f ? [one('fence lock', f.lock)] : []);
  switch (req.op) {
    case 'acquire':
    case 'release':
    case 'cancelWait':
    case 'get':
      return [one('lock', req.name)];
    case 'locks':
      return [one('lock', req.prefix ?? '', true)];
    case 'campaign':
    case 'proclaim':
    case 'resign':
    case 'leader':
    case 'observe':
    case 'unobserve':
      return [one('election', req.election)];
    case 'put':
    case 'delete':
      return [one('key', req.key), ...fence(req.fence)];
    case 'txn':
      // (Lists absent only from a request built in-process without parseRequest.)
      return [
        ...(req.compare ?? []).map((c) => (c.target === 'lock' ? one('fence lock', c.lock) : one('key', c.key))),
        ...[...(req.success ?? []), ...(req.failure ?? [])].map((op) => one('key', op.key)),
        ...fence(req.fence),
      ];
    case 'kvGet':
      return [one('key', req.key)];
    case 'watch':
    case 'unwatch':
      return [one('key', req.prefix, true)];
    case 'beginOp':
    case 'completeOp':
      return [one('opKey', req.opKey), ...fence(req.fence)];
    case 'hello':
    case 'status':
    case 'openSession':
    case 'attach':
    case 'keepAlive':
    case 'keepAlives':
    case 'closeSession':
    case 'members':
    case 'addMember':
    case 'removeMember':
    case 'transferLeader':
    case 'snapshot':
    case 'config':
    case 'configure':
    // Sessions are judged by their owner (session-owner.ts) and listings narrowed to the
    // token's own (ownSessionsOnly), not by names.
    case 'sessions':
    case 'sessionInfo':
    case 'revokeSession':
      return [];
    default: {
      const unknownOp: never = req; // a new op must say which names it touches
      return unknownOp;
    }
  }
}

export function withinPrefixes(p: Principal, name: string): boolean {
  return p.prefixes === null || p.prefixes.some((prefix) => name.startsWith(prefix));
}

/** Why `p` may not make this request, or null when it may. */
export function permissionProblem(p: Principal, req: Request): WireError | null {
  // What each op needs is OP_TABLE's `permission` (src/protocol/ops.ts).
  const needs = permissionOf(req.op);
  if (needs === 'admin' && !p.admin) {
    return { code: 'PERMISSION_DENIED', message: `token "${p.name}" is not an admin token: ${req.op} is refused` };
  }
  if (p.readOnly && needs === 'write') {
    return { code: 'PERMISSION_DENIED', message: `token "${p.name}" is read-only: ${req.op} is refused` };
  }
  if (req.op === 'sessions' && !p.admin && req.owner !== undefined && req.owner !== p.name) {
    return { code: 'PERMISSION_DENIED', message: `token "${p.name}" is not an admin token: it may list only its own sessions` };
  }
  for (const t of touchedNames(req)) {
    if (withinPrefixes(p, t.name)) continue;
    const allowed = p.prefixes!.map((x) => JSON.stringify(x)).join(', ');
    const subject = t.isPrefix ? `a listing of ${t.what}s under ${JSON.stringify(t.name)}` : `${t.what} ${JSON.stringify(t.name)}`;
    return {
      code: 'PERMISSION_DENIED',
      message: `token "${p.name}" may not use ${subject}: it is limited to names starting with ${allowed}${t.isPrefix ? ' (give a prefix within them)' : ''}`,
    };
  }
  return null;
}

/** The request as `p` may make it: a session listing by a token that is not an admin
 *  token lists only that token's own sessions (Consul's ACLs, etcd's lease permissions). */
export function ownSessionsOnly<R extends Request>(p: Principal | null, req: R): R {
  if (req.op !== 'sessions' || p === null || p.admin) return req;
  return { ...req, owner: p.name };
}

/**
 * What a token limited to prefixes, or read-only, may do with a session it may use (its
 * own, see session-owner.ts, or one opened without authentication): a token limited to
 * prefixes may use only sessions whose locks, waits and elections all lie within its
 * prefixes (its prefixes may have changed since it opened the session), and a read-only
 * token only sessions that hold, await and lead nothing. The refusal never names the lock:
 * the caller may not be allowed to see it. Checked against the receiving node's applied state.
 */
export function sessionScopeProblem(p: Principal, req: Request, machine: MachineView): WireError | null {
  if (!('session' in req) || (p.prefixes === null && !p.readOnly)) return null;
  const s = machine.session(req.session);
  if (!s) return null; // the machine answers UNKNOWN_SESSION
  const names = [...s.locks.map((l) => l.name), ...s.waits.map((w) => w.name), ...s.elections];
  // Reading one's own session's view changes nothing: read-only tokens may.
  if (p.readOnly && names.length > 0 && req.op !== 'sessionInfo') {
    return { code: 'PERMISSION_DENIED', message: `token "${p.name}" is read-only: session ${req.session} holds or awaits locks, and a read-only token may use only sessions that hold nothing` };
  }
  if (names.every((name) => withinPrefixes(p, name))) return null;
  return { code: 'PERMISSION_DENIED', message: `token "${p.name}" may not use session ${req.session}: it holds, awaits or leads names outside the token's prefixes` };
}

/** Whether `req` uses a session whose owner and scope must be checked: every session op of
 *  an authenticated client (with auth off every client is the same principal). */
export function sessionScopeApplies(p: Principal, req: Request): req is Extract<Request, { session: number }> {
  return 'session' in req && p !== UNAUTHENTICATED_CLIENT;
}

/** Whether an event may be pushed to a client of `p`: events carry names too. */
export function eventVisibleTo(p: Principal, e: ServerEvent): boolean {
  switch (e.event) {
    case 'granted':
    case 'released':
      return withinPrefixes(p, e.name);
    case 'electionChanged':
      return withinPrefixes(p, e.election);
    case 'kvChanged':
      return withinPrefixes(p, e.key);
    case 'sessionExpired':
      return true;
  }
}
