// Property-based fuzzing of every decoder and validator that faces the outside (client
// port, peer port, the SDK's reading of server frames, log entries, snapshots, stored
// values, the config file), then of the two ports over real sockets: frames made from
// random bytes and mutated valid frames, sent to an in-process client port and, after a
// real handshake, to a peer port, while a well-behaved client and peer keep being served.
// Prints a table and writes bench/results/fuzz.json. Fails (exit 1) on a broken contract.
//
//   node --expose-gc --import tsx bench/fuzz.ts [--per-target 10000] [--wire 10000] [--seed 42]
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { pino } from 'pino';
import WebSocket from 'ws';
import { ClientServer } from '../src/transport/client-server.js';
import { encodeFrame } from '../src/protocol/codec.js';
import { PeerTransport } from '../src/transport/peer.js';
import { fuzzTargets, mutatedBytes, runTarget, VALID_REQUESTS, type FuzzStats } from '../test/support/fuzz-targets.js';
import { dialAsPeer } from '../test/support/peer-dialer.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const PER_TARGET = Number(arg('per-target', '10000'));
const WIRE = Number(arg('wire', '10000'));
const SEED = Number(arg('seed', '42'));

const gc = (globalThis as { gc?: () => void }).gc;
function heapMb(): number {
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

// ---- decoders and validators ---------------------------------------------------------------

const heapBefore = heapMb();
const rows: (FuzzStats & { heapAfterMb: number })[] = [];
for (const t of fuzzTargets()) {
  const stats = runTarget(t, PER_TARGET, SEED);
  rows.push({ ...stats, heapAfterMb: heapMb() });
  process.stderr.write(`  ${t.name}: ${stats.inputs} inputs${stats.failure ? ' FAILED' : ''}\n`);
}
const heapAfter = heapMb();

// ---- the ports over real sockets -----------------------------------------------------------

interface WireStats {
  readonly port: string;
  readonly frames: number;
  readonly seconds: number;
  readonly closedByNode: number;
  readonly errorAnswers: number;
  readonly goodRequestsServed: number;
  readonly goodRequestsFailed: number;
  readonly heapDeltaMb: number;
}

const silent = pino({ level: 'silent' });
const frames = fc.sample(mutatedBytes(VALID_REQUESTS.map((r) => encodeFrame(r))), { numRuns: WIRE, seed: SEED });

/** Resolves when `ws` has answered (a message or a pong) or closed, whichever comes first. */
function settled(ws: WebSocket, viaPing: boolean): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      ws.off('message', done);
      ws.off('pong', done);
      ws.off('close', done);
      resolve();
    };
    ws.once(viaPing ? 'pong' : 'message', done);
    ws.once('close', done);
    if (viaPing) ws.ping();
  });
}

/** A well-behaved client that asks for status every few ms; every request must be answered. */
async function steadyClient(url: string): Promise<{ stop(): Promise<{ served: number; failed: number }> }> {
  const ws = new WebSocket(url);
  await new Promise((r) => ws.once('open', r));
  let sent = 0;
  let served = 0;
  ws.on('message', () => served++);
  const ticker = setInterval(() => {
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(encodeFrame({ id: ++sent, op: 'status' }));
    }
  }, 2);
  return {
    async stop() {
      clearInterval(ticker);
      const deadline = Date.now() + 2000;
      while (served < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      ws.close();
      return { served, failed: sent - served };
    },
  };
}

/** Send each frame on one of `conns` connections, waiting for its answer or the close. */
/** A connection to fuzz: its socket, and how a frame is sent on it (a peer link adds MACs). */
interface Sender {
  readonly ws: WebSocket;
  send(frame: Uint8Array): void;
}

async function sendAll(frames: readonly Uint8Array[], conns: number, open: () => Promise<Sender>, viaPing: boolean): Promise<{ closedByNode: number; answers: number }> {
  let closedByNode = 0;
  let answers = 0;
  await Promise.all(
    Array.from({ length: conns }, async (_, c) => {
      let ws: WebSocket | null = null;
      let sender: Sender | null = null;
      for (let i = c; i < frames.length; i += conns) {
        if (!ws || !sender || ws.readyState !== WebSocket.OPEN) {
          sender = await open();
          ws = sender.ws;
          ws.on('message', () => answers++);
          ws.on('close', (code) => {
            if (code !== 1005 && code !== 1000) closedByNode++;
          });
        }
        const answered = settled(ws, viaPing);
        sender.send(frames[i]!);
        await answered;
      }
      ws?.close();
    }),
  );
  return { closedByNode, answers };
}

async function clientPortWire(): Promise<WireStats> {
  const server = new ClientServer({
    host: '127.0.0.1',
    port: 0,
    logger: silent,
    onConnection: (conn) => conn.on('request', (req) => conn.send({ id: req.id, ok: true, result: { op: req.op } })),
  });
  const { port } = await server.start();
  const url = `ws://127.0.0.1:${port}`;
  const heap0 = heapMb();
  const started = performance.now();
  const good = await steadyClient(url);
  const open = async (): Promise<Sender> => {
    const ws = new WebSocket(url);
    ws.on('error', () => {});
    await new Promise((r) => ws.once('open', r));
    return { ws, send: (frame) => ws.send(frame) };
  };
  const { closedByNode, answers } = await sendAll(frames, 8, open, false);
  const seconds = (performance.now() - started) / 1000;
  const { served, failed } = await good.stop();
  await server.stop();
  return { port: 'client', frames: frames.length, seconds, closedByNode, errorAnswers: answers, goodRequestsServed: served, goodRequestsFailed: failed, heapDeltaMb: heapMb() - heap0 };
}

async function peerPortWire(): Promise<WireStats> {
  const secret = 'fuzz-bench-secret-0123456789';
  const mk = (id: string) =>
    new PeerTransport({ clusterId: 'fuzz', selfId: id, secrets: [secret], listenHost: '127.0.0.1', listenPort: 0, peers: new Map(), logger: silent, backoffMinMs: 10, backoffMaxMs: 50 });
  const target = mk('n3');
  const friend = mk('n2');
  const { port } = await target.start();
  const { port: friendPort } = await friend.start();
  target.setPeers(new Map([['n1', 'ws://127.0.0.1:1'], ['n2', `ws://127.0.0.1:${friendPort}`]]));
  friend.setPeers(new Map([['n3', `ws://127.0.0.1:${port}`]]));
  const fromFriend = { sent: 0, heard: 0 };
  target.on('raft', (from, msgs) => {
    if (from === 'n2') fromFriend.heard += msgs.length;
  });
  while (!friend.connectedPeers().includes('n3')) await new Promise((r) => setTimeout(r, 5));
  const heap0 = heapMb();
  const started = performance.now();
  const heartbeat = encodeFrame({ k: 'r', m: [{ type: 'heartbeat', from: 'n1', to: 'n3', term: 1, commit: 0 }] });
  const peerFrames = fc.sample(
    fc.oneof(mutatedBytes([heartbeat, encodeFrame({ k: 'a', p: { t: 'fwd', rid: 1, req: VALID_REQUESTS[6] } })]), fc.constant(heartbeat)),
    { numRuns: Math.floor(WIRE / 2), seed: SEED },
  );
  // The friend, a real member, keeps sending; none of its messages may be lost meanwhile.
  const ticker = setInterval(() => {
    friend.send('n3', [{ type: 'heartbeat', from: 'n2', to: 'n3', term: 1, commit: 0 }]);
    fromFriend.sent++;
  }, 2);
  const invalid0 = target.stats().invalidFrames + target.stats().invalidMessages;
  const open = () => dialAsPeer(`ws://127.0.0.1:${port}`, { clusterId: 'fuzz', secret, from: 'n1', to: 'n3' });
  // One connection: the acceptor keeps one link per peer, a second would supersede the first.
  const { closedByNode } = await sendAll(peerFrames, 1, open, true);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(ticker);
  await new Promise((r) => setTimeout(r, 100));
  const stats = target.stats();
  await friend.stop();
  await target.stop();
  return {
    port: 'peer (after the handshake)',
    frames: peerFrames.length,
    seconds,
    closedByNode,
    errorAnswers: stats.invalidFrames + stats.invalidMessages - invalid0,
    goodRequestsServed: fromFriend.heard,
    goodRequestsFailed: fromFriend.sent - fromFriend.heard,
    heapDeltaMb: heapMb() - heap0,
  };
}

const wire = [await clientPortWire(), await peerPortWire()];

// ---- report ----------------------------------------------------------------------------------

/** Text columns (the first `textColumns`) left-aligned, numbers right-aligned. */
function table(header: string[], lines: string[][], textColumns: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines].map((l) => l.map((c, i) => (i < textColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

const total = rows.reduce((n, r) => n + r.inputs, 0);
process.stdout.write(
  `\nfuzz: ${total.toLocaleString('en')} inputs over ${rows.length} decoders and validators (seed ${SEED})\n\n` +
    table(
      ['TARGET', 'SURFACE', 'INPUTS', 'ACCEPTED', 'REFUSED', 'MEAN µs', 'MAX ms', 'HEAP MB', 'RESULT'],
      rows.map((r) => [
        r.target,
        r.surface,
        r.inputs.toLocaleString('en'),
        r.accepted.toLocaleString('en'),
        r.refused.toLocaleString('en'),
        ((r.totalMs / Math.max(1, r.inputs)) * 1000).toFixed(1),
        r.maxMs.toFixed(1),
        r.heapAfterMb.toFixed(1),
        r.failure ? 'FAILED' : 'ok',
      ]),
      2,
    ) +
    `\n\nheap ${heapBefore.toFixed(1)} MB before, ${heapAfter.toFixed(1)} MB after${gc ? '' : ' (run with --expose-gc for exact figures)'}\n\n` +
    table(
      ['PORT', 'FRAMES', 'SECONDS', 'CLOSED BY NODE', 'ANSWERED/REFUSED', 'GOOD SERVED', 'GOOD LOST', 'HEAP Δ MB'],
      wire.map((w) => [w.port, w.frames.toLocaleString('en'), w.seconds.toFixed(2), String(w.closedByNode), String(w.errorAnswers), String(w.goodRequestsServed), String(w.goodRequestsFailed), w.heapDeltaMb.toFixed(1)]),
      1,
    ) +
    '\n',
);
for (const r of rows) if (r.failure) process.stdout.write(`\n${r.target}:\n${r.failure}\n`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/fuzz.json', import.meta.url),
  JSON.stringify(
    {
      bench: 'fuzz',
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      seed: SEED,
      inputs: total,
      heapMb: { before: heapBefore, after: heapAfter, exact: gc !== undefined },
      targets: rows,
      wire,
    },
    null,
    2,
  ) + '\n',
);
const broken = rows.some((r) => r.failure) || wire.some((w) => w.goodRequestsFailed > 0);
process.exit(broken ? 1 : 0);
