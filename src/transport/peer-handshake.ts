// The peer link handshake: mutual challenge-response over the cluster secret. The secret
// never crosses the wire; each side proves it knows it by an HMAC over a nonce the OTHER
// side just drew, so a recorded handshake cannot be replayed.
//
//   acceptor -> dialer    {k:'hello',   v, nonce: A}
//   dialer   -> acceptor  {k:'auth',    v, clusterId, from, to, nonce: D,
//                          mac: HMAC(secret, "dial"   | A | clusterId | from | to)}
//   acceptor -> dialer    {k:'welcome', mac: HMAC(secret, "accept" | D | clusterId | to | from)}
//
// ("|" is an unambiguous length-prefixed concatenation; the labels keep one side's proof
// from being reflected back as the other's.) The acceptor checks cluster id, target id,
// that `from` is a member it expects a dial from, and the MAC; the dialer checks the
// acceptor's MAC before it trusts a single frame on the link.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** 2: frames after the handshake carry a MAC (peer-frames.ts). */
export const PEER_PROTOCOL_VERSION = 2;
export const NONCE_BYTES = 32;
const MAC_BYTES = 32;

export interface Hello {
  readonly k: 'hello';
  readonly v: number;
  readonly nonce: Uint8Array;
}

export interface Auth {
  readonly k: 'auth';
  readonly v: number;
  readonly clusterId: string;
  readonly from: string;
  readonly to: string;
  readonly nonce: Uint8Array;
  readonly mac: Uint8Array;
}

export interface Welcome {
  readonly k: 'welcome';
  readonly mac: Uint8Array;
}

export function newNonce(): Uint8Array {
  return new Uint8Array(randomBytes(NONCE_BYTES));
}

function mac(secret: string, parts: readonly (string | Uint8Array)[]): Uint8Array {
  const h = createHmac('sha256', secret);
  for (const part of parts) {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    h.update(len);
    h.update(bytes);
  }
  return new Uint8Array(h.digest());
}

/** What the dialer proves: it knows the secret, answering the acceptor's nonce. */
export function dialerMac(secret: string, acceptorNonce: Uint8Array, clusterId: string, from: string, to: string): Uint8Array {
  return mac(secret, ['palisade-peer-dial', acceptorNonce, clusterId, from, to]);
}

/** What the acceptor proves in return, answering the dialer's nonce. */
export function acceptorMac(secret: string, dialerNonce: Uint8Array, clusterId: string, acceptor: string, dialer: string): Uint8Array {
  return mac(secret, ['palisade-peer-accept', dialerNonce, clusterId, acceptor, dialer]);
}

/** Constant-time comparison, so a forger learns nothing from how fast it is refused. */
export function macsEqual(expected: Uint8Array, received: Uint8Array): boolean {
  return expected.length === received.length && timingSafeEqual(expected, received);
}

function isMap(x: unknown): x is Readonly<Record<string, unknown>> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}

const isId = (x: unknown): x is string => typeof x === 'string' && x.length > 0 && x.length <= 256;
const isBytes = (x: unknown, n: number): x is Uint8Array => x instanceof Uint8Array && x.length === n;

export function parseHello(x: unknown): Hello | null {
  if (!isMap(x) || x.k !== 'hello' || typeof x.v !== 'number' || !isBytes(x.nonce, NONCE_BYTES)) return null;
  return { k: 'hello', v: x.v, nonce: x.nonce };
}

export function parseAuth(x: unknown): Auth | null {
  if (!isMap(x) || x.k !== 'auth' || typeof x.v !== 'number') return null;
  const { clusterId, from, to, nonce, mac: m } = x;
  if (typeof clusterId !== 'string' || clusterId.length > 256 || !isId(from) || !isId(to)) return null;
  if (!isBytes(nonce, NONCE_BYTES) || !isBytes(m, MAC_BYTES)) return null;
  return { k: 'auth', v: x.v, clusterId, from, to, nonce, mac: m };
}

export function parseWelcome(x: unknown): Welcome | null {
  if (!isMap(x) || x.k !== 'welcome' || !isBytes(x.mac, MAC_BYTES)) return null;
  return { k: 'welcome', mac: x.mac };
}
