// Which connections get which events (src/server/api/subscriptions.ts). A key's sinks are
// kept as the sink itself until a second one comes (memory per session): every way a sink
// comes and goes must leave the same deliveries as a set of sinks would.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServerEvent } from '../../src/protocol/client-protocol.js';
import { Subscriptions, type EventSink } from '../../src/server/api/subscriptions.js';
import { mulberry32 } from '../support/prng.js';

function sink(id: number, got: Map<number, ServerEvent[]>): EventSink {
  return { id, pushEvent: (e) => void (got.get(id) ?? got.set(id, []).get(id)!).push(e) };
}

const granted = (session: number): ServerEvent => ({ event: 'granted', session, name: 'l', token: 7, mode: 'exclusive' }) as ServerEvent;

test('session events reach exactly the connections that carry the session, however they came and went', () => {
  const SEED = 20261208;
  const rnd = mulberry32(SEED);
  const pick = (n: number) => rnd() % n;
  const got = new Map<number, ServerEvent[]>();
  const sinks = [0, 1, 2, 3].map((i) => sink(i, got));
  const subs = new Subscriptions();
  const model = new Map<number, Set<number>>(); // session -> sink ids, the plain reference
  for (let step = 0; step < 5_000; step++) {
    const session = 1 + pick(6);
    const s = sinks[pick(sinks.length)]!;
    switch (pick(5)) {
      case 0:
      case 1:
        subs.sessions.add(session, s);
        (model.get(session) ?? model.set(session, new Set()).get(session)!).add(s.id);
        break;
      case 2:
        subs.sessions.remove(session, s);
        model.get(session)?.delete(s.id);
        break;
      case 3:
        subs.dropConn(s);
        for (const ids of model.values()) ids.delete(s.id);
        break;
      case 4: {
        got.clear();
        const expired = pick(4) === 0;
        subs.route(expired ? ({ event: 'sessionExpired', session } as ServerEvent) : granted(session));
        const want = [...(model.get(session) ?? [])].sort();
        assert.deepEqual([...got.keys()].sort(), want, `seed ${SEED} step ${step}: session ${session}`);
        for (const id of want) assert.equal(got.get(id)!.length, 1, `seed ${SEED} step ${step}: one delivery each`);
        if (expired) model.delete(session);
        break;
      }
    }
  }
});
