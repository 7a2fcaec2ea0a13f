// The accepting side of the peer handshake (peer-handshake.ts), and what an unauthenticated
// socket on the peer port may cost: anyone who can reach the port gets this far, so every
// resource is bounded before the secret is proven.
//   - At most `maxPendingHandshakes` sockets in the handshake at once, and at most
//     `maxPendingPerAddress` of them from one address, so one address cannot hold every slot
//     and keep a restarted member out.
//   - A deadline for the whole handshake, after which the socket is destroyed.
//   - A refused socket is destroyed within `refusalGraceMs` even if it stops reading (a
//     polite close alone waits for a close frame that may never come).
//   - At most `maxHandshakeBytes` read from the socket before it is authenticated, counted on
//     the stream, so a hostile sender cannot make ws buffer a large frame first; a frame
//     longer than that is refused without being decoded.
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { NodeId } from '../raft/types.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import { PEER_PROTOCOL_VERSION, acceptorMac, dialerMac, macsEqual, newNonce, parseAuth } from './peer-handshake.js';
import type { PeerSecrets } from './peer-secrets.js';
import { closeWithin, guarded, rawBytes } from './ws-util.js';
import { RefusalLog } from './refusal-log.js';

export interface AcceptorOptions {
  readonly clusterId: string;
  readonly selfId: NodeId;
  /** The secrets a dialer may prove (read at each handshake: a reload replaces them). */
  readonly secrets: () => PeerSecrets;
  readonly handshakeTimeoutMs: number;
  readonly maxPendingHandshakes: number;
  readonly maxPendingPerAddress: number;
  readonly maxHandshakeBytes: number;
  readonly refusalGraceMs: number;
  readonly refusedCode: number;
  readonly log: Logger;
  /** Counters shared with the transport's stats. */
  readonly stats: { handshakeFailures: number; handshakeOverflows: number };
  /** Whether `from` is a member that dials this node. */
  readonly expects: (from: NodeId) => boolean;
  /** The handshake succeeded; from now on the socket is the transport's link to `peer`.
   *  `nonces` are the two handshake nonces (ours, the dialer's), fresh for this link;
   *  `secret` the one the dialer proved, which keys the link. */
  readonly onAuthenticated: (peer: NodeId, ws: WebSocket, nonces: { readonly acceptor: Uint8Array; readonly dialer: Uint8Array }, secret: string) => void;
}

export class PeerAcceptor {
  private readonly pending = new Set<WebSocket>();
  private readonly perAddress = new Map<string, number>();
  /** Every refusal of an inbound socket, whoever sent it: rate-limited (refusal-log.ts). */
  private readonly refusals: RefusalLog;

  constructor(private readonly o: AcceptorOptions) {
    this.refusals = new RefusalLog(o.log, 'refused inbound peer link', 'refused peer handshakes');
  }

  /** Write what the refusal log has counted (the node is stopping). */
  close(): void {
    this.refusals.close();
  }

  /** Sockets still in the handshake (to close them when the node stops). */
  pendingSockets(): WebSocket[] {
    return [...this.pending];
  }

  /** A new socket on the peer port. `socket` is the stream under it, counted while unauthenticated. */
  admit(ws: WebSocket, socket: Duplex, remote: string): void {
    const o = this.o;
    const fromAddress = this.perAddress.get(remote) ?? 0;
    if (this.pending.size >= o.maxPendingHandshakes || fromAddress >= o.maxPendingPerAddress) {
      // Unauthenticated sockets cost memory and timers: a flood of them is cut, not queued.
      o.stats.handshakeOverflows += 1;
      this.refusals.refuse(remote, { reason: 'too many peer handshakes at once; cut on arrival', pending: this.pending.size, fromAddress }, 'too many handshakes');
      ws.terminate();
      return;
    }
    this.pending.add(ws);
    this.perAddress.set(remote, fromAddress + 1);
    const nonce = newNonce();
    let claimed: string | undefined;
    let refused = false;
    let done = false;

    let received = 0;
    const countBytes = (chunk: Buffer | string): void => {
      received += chunk.length;
      if (received > o.maxHandshakeBytes) {
        o.stats.handshakeFailures += 1;
        this.refusals.refuse(remote, { reason: 'the handshake sent too many bytes; cut', received }, 'too many bytes');
        ws.terminate();
      }
    };
    socket.on('data', countBytes);

    // The deadline stands even after a refusal: whatever happens, the socket is gone by then.
    const timer = setTimeout(() => {
      if (!refused) {
        this.refusals.refuse(remote, { reason: 'the handshake timed out', peer: claimed }, 'timed out');
        o.stats.handshakeFailures += 1;
      }
      ws.terminate();
    }, o.handshakeTimeoutMs);
    timer.unref();

    const release = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.off('data', countBytes);
      ws.off('message', onMessage);
      ws.off('close', onClose);
      this.pending.delete(ws);
      const left = (this.perAddress.get(remote) ?? 1) - 1;
      if (left > 0) this.perAddress.set(remote, left);
      else this.perAddress.delete(remote);
    };

    /** `reason` is what the dialler is told; `kind` names it in the refusal log's summaries
     *  (a fixed word, never input); `detail` is what only the log says. */
    const refuse = (reason: string, kind: string, detail?: string): void => {
      if (refused) return; // frames that were already in flight
      refused = true;
      o.stats.handshakeFailures += 1;
      // The log says the whole reason; the dialler was told `reason` only.
      const logged = detail ?? reason;
      this.refusals.refuse(remote, { peer: claimed, reason: logged, ...(detail !== undefined ? { told: reason } : {}) }, kind);
      closeWithin(ws, o.refusedCode, reason, o.refusalGraceMs);
    };

    const onMessage = guarded(ws, o.log, 'peer handshake', (data: RawData, isBinary: boolean) => {
      if (refused || done) return;
      const bytes = rawBytes(data);
      if (!isBinary) return refuse('handshake frames are binary', 'not binary');
      if (bytes.length > o.maxHandshakeBytes) return refuse('handshake frame too large', 'frame too large');
      let frame: unknown;
      try {
        frame = decodeFrame(bytes);
      } catch {
        return refuse('no valid auth frame', 'no auth frame');
      }
      const auth = parseAuth(frame);
      if (!auth) return refuse('no valid auth frame', 'no auth frame');
      claimed = auth.from.slice(0, 64);
      const { selfId, clusterId } = o;
      // Reasons quote at most 64 characters of what was sent (closeWithin bounds the rest).
      if (auth.v !== PEER_PROTOCOL_VERSION) return refuse(`peer protocol ${auth.v}, expected ${PEER_PROTOCOL_VERSION}`, 'peer protocol');
      // The MAC first, over the ids the dialler claims: until it has proven a secret it is
      // told nothing about this node (not its id, not which ids are members), only that the
      // handshake failed; the log says which field was wrong. Any of our secrets (a rotation);
      // we answer with the one the dialer proved.
      const secret = o.secrets().find((s) => macsEqual(dialerMac(s, nonce, auth.clusterId, auth.from, auth.to), auth.mac));
      if (secret === undefined) {
        const why = auth.clusterId !== clusterId ? 'wrong cluster id' : auth.to !== selfId ? 'wrong target id' : !o.expects(auth.from) ? 'unknown node id' : 'wrong secret';
        return refuse('the handshake did not prove the cluster secret', why, why);
      }
      if (auth.clusterId !== clusterId) return refuse(`wrong cluster id "${auth.clusterId.slice(0, 64)}"`, 'wrong cluster id');
      if (auth.to !== selfId) return refuse(`wrong target id "${auth.to.slice(0, 64)}" (this is ${selfId})`, 'wrong target id');
      if (!o.expects(auth.from)) return refuse(`unknown node id "${claimed}"`, 'unknown node id');
      if (auth.from > selfId) return refuse(`${auth.from} should not dial ${selfId}: the lower id dials`, 'wrong direction');
      ws.send(encodeFrame({ k: 'welcome', mac: acceptorMac(secret, auth.nonce, clusterId, selfId, auth.from) }));
      release();
      o.onAuthenticated(auth.from, ws, { acceptor: nonce, dialer: auth.nonce }, secret);
    });
    const onClose = (): void => release();
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.on('error', (err) => o.log.debug({ remote, peer: claimed, err: err.message }, 'inbound peer socket error'));
    ws.send(encodeFrame({ k: 'hello', v: PEER_PROTOCOL_VERSION, nonce }));
  }
}

