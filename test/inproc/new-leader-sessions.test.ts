// A new leader may hold entries that committed under its predecessor but that it has not
// applied yet: sessions opened just before the old leader died. Until an entry of its own
// term commits and is applied (thesis §6.4), "no such session" is a guess, and answering
// it would end a live session on the client. Keepalives and attaches that reach the new
// leader in that window (the ones that were waiting for a leader on the followers arrive
// exactly then) must be answered for the session, never with UNKNOWN_SESSION.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InProcessCluster } from '../support/in-process-cluster.js';
import { RawSession, type Reply } from '../support/raw-client.js';

const ROUNDS = 4;
const SESSIONS = 8;

describe('a new leader and the sessions its predecessor opened last', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('keepalives and attaches during the failover never answer UNKNOWN_SESSION for a committed session', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const leader = await c.waitForLeader();
      const survivors = c.nodes.map((n) => n.id).filter((id) => id !== leader);
      const clients = await Promise.all(survivors.map((id) => c.rawClient(c.node(id).clientUrl)));
      const atLeader = await c.rawClient(c.node(leader).clientUrl);
      try {
        // Opened (committed) on the leader, which dies before the followers hear the commit.
        const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => RawSession.open(atLeader, 30_000)));
        await c.signal(leader, 'SIGKILL');
        const answers: { session: number; op: string; reply: Reply }[] = [];
        await Promise.all(
          sessions.flatMap((s, i) =>
            (['attach', 'keepAlive'] as const).map(async (op) => {
              const client = clients[i % clients.length]!;
              // UNAVAILABLE (no leader yet) is retried, as a client would.
              for (let attempt = 0; attempt < 100; attempt++) {
                const reply = await client.call({ op, session: s.id }, 5_000);
                answers.push({ session: s.id, op, reply });
                if (reply.ok || reply.error.code !== 'UNAVAILABLE') return;
                await new Promise((r) => setTimeout(r, 20));
              }
            }),
          ),
        );
        const unknown = answers.filter((a) => !a.reply.ok && a.reply.error.code === 'UNKNOWN_SESSION');
        assert.deepEqual(unknown, [], `round ${round}: a committed session was called unknown`);
        for (const s of sessions) {
          assert.ok(
            answers.some((a) => a.session === s.id && a.reply.ok),
            `round ${round}: session ${s.id} was confirmed by the new leader`,
          );
        }
      } finally {
        atLeader.close();
        for (const cl of clients) cl.close();
      }
      await c.start(leader);
    }
  });
});
