// Worker A of the payment story: takes the lock and charges the customer once with
// lock.once. After the API has charged, and before the charge is recorded in the ledger, it
// reports "charged" and waits for a line on stdin — the point at which the story pauses it
// (SIGSTOP) past its TTL. Then it tries to record the charge and reports how that went.
//   node --import tsx worker.ts --endpoints E --lock NAME --ttl MS --api URL --op KEY --amount N
// Output: JSON lines {"event":"acquired"}, {"event":"charged"}, then {"event":"done"} or
// {"event":"error", "name": ..., "code": ...}.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { LockClient, PalisadeError } from '../../src/client/index.js';
import { chargeOnce } from './charge.js';

const { values: o } = parseArgs({
  options: {
    endpoints: { type: 'string' },
    lock: { type: 'string' },
    ttl: { type: 'string', default: '2000' },
    api: { type: 'string' },
    op: { type: 'string', default: 'charge-42' },
    amount: { type: 'string', default: '4200' },
    who: { type: 'string', default: 'A' },
  },
});
const say = (x: object): void => void process.stdout.write(`${JSON.stringify(x)}\n`);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const client = await LockClient.connect({ endpoints: o.endpoints!.split(','), ttlMs: Number(o.ttl) });
const lock = await client.acquire(o.lock!);
say({ event: 'acquired', token: lock.token, session: client.sessionId });
try {
  const receipt = await chargeOnce(lock, o.op!, o.api!, Number(o.amount), {
    who: o.who!,
    afterCharge: async (r) => {
      say({ event: 'charged', ...r });
      await lines.next(); // paused here; a line means "go on"
    },
  });
  say({ event: 'done', receipt, signalAborted: lock.signal.aborted });
} catch (e) {
  const err = e as Error;
  say({
    event: 'error',
    name: err.name,
    code: e instanceof PalisadeError ? e.code : null,
    message: err.message,
    signalAborted: lock.signal.aborted,
  });
}
await lock.release().catch(() => {});
await client.close().catch(() => {});
process.exit(0);
