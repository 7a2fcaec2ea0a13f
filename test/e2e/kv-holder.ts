// A lock holder for the fenced-put test, in a process of its own so the test can pause it
// (SIGSTOP) past its TTL: it takes the lock and writes a key fenced by it; then, told to on
// stdin, writes again with the token it still has — once through its Lock handle (the SDK
// may refuse locally: the lease may be gone) and once as a careless client would, sending
// the bare {lock, token} fence straight to the cluster, which is what decides.
//   node --import tsx kv-holder.ts <endpoints> <lock> <ttlMs> <key>
import { createInterface } from 'node:readline';
import { FencedError, LockClient, PalisadeError } from '../../src/client/index.js';

const [endpoints, name, ttl, key] = process.argv.slice(2) as [string, string, string, string];
const say = (o: object): void => void process.stdout.write(`${JSON.stringify(o)}\n`);
const failure = (e: unknown) => ({
  ok: false,
  name: (e as Error).name,
  code: e instanceof PalisadeError ? e.code : null,
  message: (e as Error).message,
  currentToken: e instanceof FencedError ? e.currentToken : undefined,
  causeCode: (e as Error).cause instanceof PalisadeError ? ((e as Error).cause as PalisadeError).code : undefined,
});

const client = await LockClient.connect({ endpoints: endpoints.split(','), ttlMs: Number(ttl) });
const lock = await client.acquire(name);
const first = await lock.put(key, 'A: before the pause');
say({ event: 'acquired', token: lock.token, revision: first.revision });

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'put') continue;
  say({ event: 'resumed', signalAborted: lock.signal.aborted });
  try {
    const r = await lock.put(key, 'A: late, through the handle');
    say({ event: 'handlePut', ok: true, revision: r.revision });
  } catch (e) {
    say({ event: 'handlePut', ...failure(e) });
  }
  try {
    const r = await client.put(key, 'A: late, bare fence', { fence: { lock: name, token: lock.token } });
    say({ event: 'barePut', ok: true, revision: r.revision });
  } catch (e) {
    say({ event: 'barePut', ...failure(e) });
  }
  break;
}
await client.close().catch(() => {});
process.exit(0);
