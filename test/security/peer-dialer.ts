// A hand-driven peer connection: dials a node's peer port, completes the handshake as a
// member that knows the secret, and then sends whatever frames the test chooses. This is
// how hostile input reaches the code behind the handshake (the frame and Raft message
// validation), which an outsider never gets to.
import WebSocket, { type ClientOptions } from 'ws';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';
import { PEER_PROTOCOL_VERSION, dialerMac, newNonce, parseHello } from '../../src/transport/peer-handshake.js';

export interface PeerIdentity {
  readonly clusterId: string;
  readonly secret: string;
  /** Who we claim to be (must be a member whose id sorts before `to`). */
  readonly from: string;
  readonly to: string;
}

/** Resolves with an authenticated socket (the acceptor's welcome received). */
export async function dialAsPeer(url: string, id: PeerIdentity, options: ClientOptions = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false, ...options });
  ws.on('error', () => {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('peer handshake timed out'));
    }, 5000);
    let step: 'hello' | 'welcome' = 'hello';
    ws.on('message', (data: Buffer) => {
      if (step === 'hello') {
        const hello = parseHello(decodeFrame(data));
        if (!hello) return reject(new Error('no hello from the acceptor'));
        const mac = dialerMac(id.secret, hello.nonce, id.clusterId, id.from, id.to);
        ws.send(encodeFrame({ k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId: id.clusterId, from: id.from, to: id.to, nonce: newNonce(), mac }));
        step = 'welcome';
        return;
      }
      // The welcome: we do not check its MAC (we are the test, not a node).
      clearTimeout(timer);
      ws.removeAllListeners('message');
      resolve(ws);
    });
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      reject(new Error(`closed during the handshake: ${code} ${reason.toString()}`));
    });
  });
}
