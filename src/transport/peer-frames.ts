// Per-frame authentication of a peer link after its handshake. The handshake proves each
// side knows the secret, but without TLS anyone on the path could inject or replay frames on
// the established TCP connection afterwards (Raft traffic, forwarded client requests). So
// every frame carries a MAC:
//
//   frame = payload | HMAC-SHA256(key, seq | payload)[0..16]
//
// with one key per direction, derived from the secret and BOTH handshake nonces (fresh for
// each link, so a frame of one link is worthless on another), and `seq` the number of frames
// sent before it in that direction (8 bytes, big-endian; never sent, both sides count), so a
// frame replayed, dropped, reordered or moved to the other direction fails. A frame that
// fails closes the link; the dialer reconnects with fresh nonces.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const FRAME_TAG_BYTES = 16;

export interface LinkNonces {
  /** The nonce the acceptor drew (its hello). */
  readonly acceptor: Uint8Array;
  /** The nonce the dialer drew (its auth). */
  readonly dialer: Uint8Array;
}

function key(secret: string, direction: 'dialer->acceptor' | 'acceptor->dialer', n: LinkNonces, clusterId: string, dialer: string, acceptor: string): Buffer {
  const h = createHmac('sha256', secret);
  for (const part of ['palisade-peer-frames', direction, n.acceptor, n.dialer, clusterId, dialer, acceptor]) {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    h.update(len);
    h.update(bytes);
  }
  return h.digest();
}

/** Seals outgoing frames and opens incoming ones on one link. */
export class FrameAuth {
  private readonly sendKey: Buffer;
  private readonly receiveKey: Buffer;
  private sent = 0n;
  private received = 0n;

  constructor(secret: string, role: 'dialer' | 'acceptor', nonces: LinkNonces, clusterId: string, dialer: string, acceptor: string) {
    const out = key(secret, 'dialer->acceptor', nonces, clusterId, dialer, acceptor);
    const back = key(secret, 'acceptor->dialer', nonces, clusterId, dialer, acceptor);
    this.sendKey = role === 'dialer' ? out : back;
    this.receiveKey = role === 'dialer' ? back : out;
  }

  /** `payload` with its tag; call in the order the frames are sent. */
  seal(payload: Uint8Array): Buffer {
    const tag = tagOf(this.sendKey, this.sent++, payload);
    return Buffer.concat([payload, tag]);
  }

  /** The payload of an incoming frame, or null when its tag is not the next expected one. */
  open(frame: Uint8Array): Uint8Array | null {
    if (frame.length < FRAME_TAG_BYTES) return null;
    const payload = frame.subarray(0, frame.length - FRAME_TAG_BYTES);
    const tag = frame.subarray(frame.length - FRAME_TAG_BYTES);
    const expected = tagOf(this.receiveKey, this.received, payload);
    if (!timingSafeEqual(expected, tag)) return null;
    this.received += 1n;
    return payload;
  }
}

function tagOf(k: Buffer, seq: bigint, payload: Uint8Array): Buffer {
  const s = Buffer.alloc(8);
  s.writeBigUInt64BE(seq);
  return createHmac('sha256', k).update(s).update(payload).digest().subarray(0, FRAME_TAG_BYTES);
}
