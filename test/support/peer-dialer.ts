// A hand-driven peer connection: dials a node's peer port, completes the handshake as a
// member that knows the secret, and then sends whatever frames the test chooses. This is
// how hostile input reaches the code behind the handshake (the frame and Raft message
// validation), which an outsider never gets to.
import WebSocket, { type ClientOptions } from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { FrameAuth } from '../../src/transport/peer-frames.js';
import { PEER_PROTOCOL_VERSION, dialerMac, newNonce, parseHello } from '../../src/transport/peer-handshake.js';

export interface PeerIdentity {
  readonly clusterId: string;
  readonly secret: string;
  /** Who we claim to be (must be a member whose id sorts before `to`). */
  readonly from: string;
  readonly to: string;
}

/** An authenticated link: `send` adds each frame's MAC, as a node would. */
export interface PeerSocket {
  readonly ws: WebSocket;
  send(frame: Uint8Array): void;
}

/** Resolves with an authenticated socket (the acceptor's welcome received). */
export async function dialAsPeer(url: string, id: PeerIdentity, options: ClientOptions = {}): Promise<PeerSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false, ...options });
  ws.on('error', () => {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('peer handshake timed out'));
    }, 5000);
    let step: 'hello' | 'welcome' = 'hello';
    let acceptorNonce: Uint8Array = new Uint8Array(0);
    const dialerNonce = newNonce();
    ws.on('message', (data: Buffer) => {
      if (step === 'hello') {
        const hello = parseHello(decodeFrame(data));
        if (!hello) return reject(new Error('no hello from the acceptor'));
        acceptorNonce = hello.nonce;
        const mac = dialerMac(id.secret, hello.nonce, id.clusterId, id.from, id.to);
        ws.send(encodeFrame({ k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId: id.clusterId, from: id.from, to: id.to, nonce: dialerNonce, mac }));
        step = 'welcome';
        return;
      }
      // The welcome: we do not check its MAC (we are the test, not a node).
      clearTimeout(timer);
      ws.removeAllListeners('message');
      const auth = new FrameAuth(id.secret, 'dialer', { acceptor: acceptorNonce, dialer: dialerNonce }, id.clusterId, id.from, id.to);
      resolve({ ws, send: (frame) => ws.send(auth.seal(frame)) });
    });
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      reject(new Error(`closed during the handshake: ${code} ${reason.toString()}`));
    });
  });
}
