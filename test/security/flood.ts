// A hostile load generator, run as its own process (so that its CPU does not skew the
// honest client's latency, measured in the test process): for `durationMs` it pushes
// frames that cost a decoder the most per byte (arrays of empty maps) at a node's
// client port before hello, at its peer port before the handshake, and (with a token)
// at its client port after hello. Prints one JSON line of what it sent.
//   node --import tsx test/security/flood.ts '{"clientUrl":..,"peerUrl":..,"durationMs":..,"token":..}'
import WebSocket from 'ws';
import { encodeFrame } from '../../src/protocol/codec.js';

interface FloodPlan {
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly durationMs: number;
  readonly token?: string;
}

const plan = JSON.parse(process.argv[2] ?? '{}') as FloodPlan;
const deadline = Date.now() + plan.durationMs;
const sent = { clientPreAuthBytes: 0, peerPreAuthBytes: 0, clientAuthedBytes: 0, connections: 0 };

/** A map {id, op, junk: [{} x n]}: n + a few bytes, n objects when decoded. */
function emptyMaps(bytes: number): Buffer {
  const n = bytes - 32;
  const head = Buffer.from(encodeFrame({ id: 1, op: 'status' }));
  // Turn the 2-entry fixmap into a 3-entry one and append "junk": array32 of n empty maps.
  head[0] = 0x83;
  const key = Buffer.from([0xa4, ...Buffer.from('junk')]);
  const arr = Buffer.alloc(5 + n, 0x80);
  arr[0] = 0xdd;
  arr.writeUInt32BE(n, 1);
  return Buffer.concat([head, key, arr]);
}

const MiB = 1 << 20;
const clientFrame = emptyMaps(MiB);
const peerFrame = emptyMaps(8 * MiB);

/** One connection: open, run `talk`, resolve when closed (or after 2 s). */
function connection(url: string, talk: (ws: WebSocket) => void): Promise<void> {
  sent.connections += 1;
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1 << 30 });
  return new Promise((resolve) => {
    const timer = setTimeout(() => ws.terminate(), 2000);
    ws.on('error', () => {});
    ws.on('open', () => talk(ws));
    ws.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function loop(url: string, talk: (ws: WebSocket) => void): Promise<void> {
  while (Date.now() < deadline) await connection(url, talk);
}

const loops: Promise<void>[] = [];
for (let i = 0; i < 6; i++) {
  loops.push(
    loop(plan.clientUrl, (ws) => {
      for (let k = 0; k < 5; k++) ws.send(clientFrame, () => {});
      sent.clientPreAuthBytes += 5 * clientFrame.length;
    }),
  );
}
for (let i = 0; i < 3; i++) {
  loops.push(
    loop(plan.peerUrl, (ws) => {
      ws.send(peerFrame, () => {});
      sent.peerPreAuthBytes += peerFrame.length;
    }),
  );
}
if (plan.token) {
  const token = plan.token;
  for (let i = 0; i < 2; i++) {
    loops.push(
      loop(plan.clientUrl, (ws) => {
        ws.send(encodeFrame({ id: 0, op: 'hello', version: 1, token }));
        ws.once('message', () => {
          for (let k = 0; k < 5; k++) ws.send(clientFrame, () => {});
          sent.clientAuthedBytes += 5 * clientFrame.length;
        });
      }),
    );
  }
}
await Promise.all(loops);
process.stdout.write(JSON.stringify(sent) + '\n');
