// Client A of the paused-holder story: takes a lock, reports its token, then (when told to,
// after it may have been paused for a long time) writes to the fenced resource with the
// token it still believes in. It writes even if its lock.signal says the lease may be
// lost — as a buggy or unlucky client would — so the resource's check is what is shown.
//   node --import tsx holder.ts <endpoints> <lock> <ttlMs> <resourceUrl>
import { createInterface } from 'node:readline';
import { LockClient } from '../../src/client/index.js';

const [endpoints, name, ttl, resourceUrl] = process.argv.slice(2);
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

const client = await LockClient.connect({ endpoints: endpoints!.split(','), ttlMs: Number(ttl) });
const lock = await client.acquire(name!);
say({ event: 'acquired', token: lock.token });

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'write') continue;
  // By the time this line is read, timers that came due during a pause have already run
  // (Node runs due timers before it reads input), so the signal reflects the lost lease.
  say({ event: 'resumed', signalAborted: lock.signal.aborted, reason: String((lock.signal.reason as Error | undefined)?.message ?? '') });
  const res = await fetch(resourceUrl!, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: lock.token, value: 'written by A' }),
  });
  say({ event: 'wrote', status: res.status, body: await res.json() });
  break;
}
await client.close().catch(() => {});
process.exit(0);
