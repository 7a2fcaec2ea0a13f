// One authenticated peer link and its frames: sealing and sending Raft batches and
// application payloads, and opening, decoding and validating what arrives. The transport
// (peer.ts) owns the links and decides where frames go; this module says what a frame is.
//
// Frames (msgpack maps): {k:'r', m: Message[]} Raft, {k:'a', p: payload} application.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import type { Message, NodeId } from '../raft/types.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import { FRAME_TAG_BYTES, FrameAuth, type LinkNonces } from './peer-frames.js';
import { CLOSE, type PeerTransportStats, type ResolvedPeerOptions } from './peer-options.js';
import { parseRaftMessage } from './raft-message.js';
import { closeWithin, rawBytes } from './ws-util.js';

export interface Link {
  readonly peer: NodeId;
  readonly ws: WebSocket;
  /** Which side dialed: this node ('dialed') or the peer ('accepted'). */
  readonly how: 'dialed' | 'accepted';
  /** The cluster secret the handshake proved: it keys the frames, and the link ends when a
   *  reload removes it. */
  readonly secret: string;
  /** MACs of the frames in both directions (peer-frames.ts). */
  readonly auth: FrameAuth;
  /** Monotonic time of the last frame or pong from the peer. */
  lastHeard: number;
}

export interface LinkContext {
  readonly opts: ResolvedPeerOptions;
  readonly log: Logger;
  readonly stats: PeerTransportStats;
}

/** What one received frame carried, once opened and checked. */
export type Received = { readonly kind: 'raft'; readonly msgs: Message[] } | { readonly kind: 'app'; readonly payload: unknown } | null;

/** A link over a socket whose handshake just succeeded (proving `secret`), with its frame keys. */
export function openLink(o: ResolvedPeerOptions, peer: NodeId, ws: WebSocket, how: 'dialed' | 'accepted', nonces: LinkNonces, secret: string): Link {
  const { clusterId, selfId } = o;
  const [dialer, acceptor] = how === 'dialed' ? [selfId, peer] : [peer, selfId];
  const auth = new FrameAuth(secret, how === 'dialed' ? 'dialer' : 'acceptor', nonces, clusterId, dialer, acceptor);
  return { peer, ws, how, secret, auth, lastHeard: performance.now() };
}

/** Send one turn's Raft messages to the link as one frame (split in halves when too large);
 *  dropped and counted when the socket is congested. */
export function sendRaft(c: LinkContext, link: Link, msgs: Message[]): void {
  if (link.ws.bufferedAmount > c.opts.maxBufferedBytes) {
    c.stats.dropsBackpressure += msgs.length;
    return;
  }
  const frame = encodeFrame({ k: 'r', m: msgs });
  if (frame.length + FRAME_TAG_BYTES > c.opts.maxFrameBytes) {
    if (msgs.length === 1) {
      c.stats.dropsOversize += 1;
      c.log.error({ peer: link.peer, type: msgs[0]!.type, bytes: frame.length }, 'a Raft message exceeds maxFrameBytes; dropped');
      return;
    }
    // Many messages in one turn: split the batch rather than lose it.
    const half = Math.ceil(msgs.length / 2);
    sendRaft(c, link, msgs.slice(0, half));
    sendRaft(c, link, msgs.slice(half));
    return;
  }
  link.ws.send(link.auth.seal(frame), { binary: true });
  c.stats.framesSent += 1;
  c.stats.messagesSent += msgs.length;
  c.stats.bytesSent += frame.length;
}

/** Send an application payload now. False when it could not be handed to the socket
 *  (congested or too large); true does not mean it arrived. */
export function sendApp(c: LinkContext, link: Link, payload: unknown): boolean {
  if (link.ws.readyState !== WebSocket.OPEN) return false;
  if (link.ws.bufferedAmount > c.opts.maxBufferedBytes) return false;
  let frame: Uint8Array;
  try {
    frame = encodeFrame({ k: 'a', p: payload });
  } catch (err) {
    c.log.error({ err, peer: link.peer }, 'cannot encode application payload');
    return false;
  }
  if (frame.length + FRAME_TAG_BYTES > c.opts.maxFrameBytes) {
    c.log.warn({ peer: link.peer, bytes: frame.length }, 'application payload exceeds maxFrameBytes; not sent');
    return false;
  }
  link.ws.send(link.auth.seal(frame), { binary: true });
  c.stats.appSent += 1;
  c.stats.framesSent += 1;
  c.stats.bytesSent += frame.length;
  return true;
}

/** Open and decode one frame from the link. A frame that fails its MAC or does not decode
 *  closes the link; unknown kinds are ignored (so a newer peer can add some). */
export function receiveFrame(c: LinkContext, link: Link, data: RawData, isBinary: boolean): Received {
  const sealed = rawBytes(data);
  c.stats.framesReceived += 1;
  c.stats.bytesReceived += sealed.length;
  // Checked before anything else, so that only a holder of the secret gets a frame decoded.
  const bytes = isBinary ? link.auth.open(sealed) : null;
  if (!bytes) {
    c.stats.invalidFrames += 1;
    c.log.warn({ peer: link.peer, binary: isBinary }, 'peer frame failed its MAC (injected, replayed or reordered); closing link');
    closeWithin(link.ws, CLOSE.PROTOCOL, 'frame MAC', c.opts.closeGraceMs);
    return null;
  }
  link.lastHeard = performance.now();
  let frame: unknown;
  try {
    frame = decodeFrame(bytes);
  } catch (err) {
    c.stats.invalidFrames += 1;
    c.log.warn({ peer: link.peer, reason: (err as Error).message }, 'malformed frame from peer; closing link');
    link.ws.close(CLOSE.PROTOCOL, 'malformed frame');
    return null;
  }
  const kind = isRecord(frame) ? frame.k : undefined;
  if (kind === 'r' && isRecord(frame) && Array.isArray(frame.m)) {
    const msgs = raftMessages(c, link, frame.m);
    return msgs.length > 0 ? { kind: 'raft', msgs } : null;
  }
  if (kind === 'a' && isRecord(frame)) {
    c.stats.appReceived += 1;
    return { kind: 'app', payload: frame.p };
  }
  c.stats.invalidFrames += 1;
  c.log.debug({ peer: link.peer, kind: typeof kind === 'string' ? kind : typeof kind }, 'ignored unknown frame from peer');
  return null;
}

/** The valid Raft messages of a frame; invalid ones are dropped and counted. */
function raftMessages(c: LinkContext, link: Link, raw: unknown[]): Message[] {
  const msgs: Message[] = [];
  for (const item of raw) {
    const parsed = parseRaftMessage(item, link.peer, c.opts.selfId);
    if ('error' in parsed) {
      c.stats.invalidMessages += 1;
      c.log.warn({ peer: link.peer, reason: parsed.error }, 'invalid Raft message from peer; dropped');
    } else {
      msgs.push(parsed);
    }
  }
  c.stats.messagesReceived += msgs.length;
  return msgs;
}

function isRecord(x: unknown): x is Readonly<Record<string, unknown>> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}
