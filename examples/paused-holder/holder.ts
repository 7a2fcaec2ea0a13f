// Client A of the paused-holder story: takes a lock, reports its token, then (when told to,
// after it may have been paused for a long time) writes to the fenced resource with the
// token it still believes in. It writes even if its lock.signal says the lease may be
// lost — as a buggy or unlucky client would — so the resource's check is what is shown.
//   node --import tsx holder.ts <endpoints> <lock> <ttlMs> <resource>
// <resource> is the resource's spec (resource.ts): an HTTP URL, or a JSON object such as
// {"kind":"postgres","connectionString":"postgresql://..."}.
import { createInterface } from 'node:readline';
import { LockClient } from '../../src/client/index.js';
import { openWriter } from './resource.js';

const [endpoints, name, ttl, resourceSpec] = process.argv.slice(2);
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

const writer = await openWriter(resourceSpec!);
const client = await LockClient.connect({ endpoints: endpoints!.split(','), ttlMs: Number(ttl) });
const lock = await client.acquire(name!);
say({ event: 'acquired', token: lock.token });

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'write') continue;
  // By the time this line is read, timers that came due during a pause have already run
  // (Node runs due timers before it reads input), so the signal reflects the lost lease.
  say({ event: 'resumed', signalAborted: lock.signal.aborted, reason: String((lock.signal.reason as Error | undefined)?.message ?? '') });
  const out = await writer.write(lock.token, 'written by A');
  say({ event: 'wrote', status: out.status, body: out.body });
  break;
}
await writer.close().catch(() => {});
await client.close().catch(() => {});
process.exit(0);
