// A hostile HTTP/JSON API client, run as its own process (its CPU does not skew the honest
// client measured in the test process). For `durationMs` it does, from 127.0.0.1, all of
// what one address can do to the client port's HTTP API:
//   - without a token: POST bodies of 1 GB (the node answers 401 unread) and GET bodies of
//     1 GB (400), on fresh connections, as fast as they are cut;
//   - slow-loris: connections that send one header line every 500 ms;
//   - with the token: event streams and long-poll acquires pipelined on a few keep-alive
//     connections, far past the per-address cap, held open; and bursts of pipelined reads
//     past the per-connection rate.
// Prints one JSON line: bytes sent, and the HTTP statuses it was answered with.
//   node --import tsx test/security/http-flood.ts '{"base":"http://..","durationMs":..,"token":..}'
import { connect, type Socket } from 'node:net';

interface FloodPlan {
  readonly base: string;
  readonly durationMs: number;
  readonly token: string;
}

const plan = JSON.parse(process.argv[2] ?? '{}') as FloodPlan;
const deadline = Date.now() + plan.durationMs;
const port = Number(new URL(plan.base).port);
const sent = { bodyBytes: 0, connections: 0 };
const statuses: Record<string, number> = {};
const open = new Set<Socket>();
const auth = `Authorization: Bearer ${plan.token}\r\n`;

/** One connection from 127.0.0.1: `talk` writes; answers' status lines are counted. */
function connection(talk: (s: Socket) => void): Promise<void> {
  sent.connections += 1;
  const s = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' });
  open.add(s);
  let tail = '';
  s.on('error', () => {});
  s.on('data', (d: Buffer) => {
    const text = tail + d.toString('latin1');
    for (const m of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) statuses[m[1]!] = (statuses[m[1]!] ?? 0) + 1;
    tail = text.slice(-16);
  });
  s.on('connect', () => talk(s));
  return new Promise((resolve) => {
    s.on('close', () => {
      open.delete(s);
      resolve();
    });
  });
}

async function loop(talk: (s: Socket) => void): Promise<void> {
  while (Date.now() < deadline) await connection(talk);
}

const chunk = Buffer.alloc(64 * 1024, 0x20);
/** Headers of `head` with a 1 GB body, then body bytes as fast as the node takes them. */
function hugeBody(head: string): (s: Socket) => void {
  return (s) => {
    s.write(`${head} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n`);
    const pump = (): void => {
      while (!s.destroyed && Date.now() < deadline && s.write(chunk)) sent.bodyBytes += chunk.length;
      if (Date.now() >= deadline) s.destroy();
    };
    s.on('drain', pump);
    pump();
  };
}

function slowLoris(s: Socket): void {
  s.write('GET /v1/locks HTTP/1.1\r\n');
  const t = setInterval(() => {
    if (s.destroyed || Date.now() >= deadline) {
      clearInterval(t);
      s.destroy();
      return;
    }
    s.write('X-Slow: 1\r\n');
  }, 500);
}

function get(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n`;
}

function post(path: string, body: unknown): string {
  const text = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/** Pipelines `requests` on one connection held until the deadline. */
function held(requests: string): (s: Socket) => void {
  return (s) => {
    s.write(requests);
    setTimeout(() => s.destroy(), Math.max(0, deadline - Date.now()));
  };
}

async function session(): Promise<number> {
  const r = await fetch(plan.base + '/v1/session/open', { method: 'POST', headers: { authorization: `Bearer ${plan.token}`, 'content-type': 'application/json' }, body: '{"ttlMs":30000}' });
  return ((await r.json()) as { session: number }).session;
}

const holder = await session();
const waiter = await session();
await fetch(plan.base + '/v1/lock/acquire', { method: 'POST', headers: { authorization: `Bearer ${plan.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ session: holder, seq: 1, name: 'flood/x' }) });

const loops: Promise<void>[] = [];
for (let i = 0; i < 4; i++) loops.push(loop(hugeBody('POST /v1/kv/put')));
for (let i = 0; i < 4; i++) loops.push(loop(hugeBody('GET /v1/locks')));
for (let i = 0; i < 32; i++) loops.push(loop(slowLoris));
for (let i = 0; i < 3; i++) loops.push(connection(held(get('/v1/kv/watch?prefix=flood/').repeat(200))));
for (let i = 0; i < 3; i++) loops.push(connection(held(post('/v1/lock/acquire', { session: waiter, seq: 1, name: 'flood/x', waitMs: 60_000 }).repeat(200))));
for (let i = 0; i < 4; i++) {
  loops.push(
    loop((s) => {
      s.write(get('/v1/lock?name=flood/x').repeat(3_000));
      setTimeout(() => s.destroy(), 1_000);
    }),
  );
}
await Promise.all(loops);
process.stdout.write(JSON.stringify({ ...sent, statuses }) + '\n');
