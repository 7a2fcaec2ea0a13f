// Server-Sent Events over the HTTP API against a real 3-node cluster: a key-prefix watch
// and an election observation start with a snapshot and then carry every change, and a
// stream on a surviving node keeps going through a leader SIGKILL; a new stream resumes
// from its snapshot.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

interface SseEvent {
  id?: string;
  event: string;
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Reads an event stream; next() resolves with the next event. */
async function openStream(url: string): Promise<{ next: (ms?: number) => Promise<SseEvent>; close: () => void; status: number }> {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  const queue: SseEvent[] = [];
  const waiters: ((e: SseEvent) => void)[] = [];
  let buf = '';
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const e: Partial<SseEvent> = {};
          for (const line of block.split('\n')) {
            const [k, ...rest] = line.split(': ');
            const v = rest.join(': ');
            if (k === 'event') e.event = v;
            else if (k === 'data') e.data = JSON.parse(v);
            else if (k === 'id') e.id = v;
          }
          if (!e.event) continue;
          const w = waiters.shift();
          if (w) w(e as SseEvent);
          else queue.push(e as SseEvent);
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    status: res.status,
    close: () => ac.abort(),
    next: (ms = 10_000) =>
      queue.length
        ? Promise.resolve(queue.shift()!)
        : new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error('no event')), ms);
            waiters.push((e) => {
              clearTimeout(t);
              resolve(e);
            });
          }),
  };
}

describe('HTTP API: watch and observe as Server-Sent Events', { timeout: 120_000 }, () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    await c?.stop();
  });

  it('streams a snapshot then changes, through a leader SIGKILL, and resumes from a new snapshot', async () => {
    const leaderId = await c.waitForLeader();
    const [f1, f2] = c.nodes.filter((n) => n.id !== leaderId).map((n) => httpBase(n.clientUrl));
    const s = (await call(f2!, 'POST', '/v1/session/open', { ttlMs: 10_000 })).body.session as number;
    await call(f2!, 'POST', '/v1/kv/put', { session: s, seq: 1, key: 'cfg/a', value: 'one' });

    const watch = await openStream(`${f1}/v1/kv/watch?prefix=cfg/`);
    const observe = await openStream(`${f1}/v1/election/observe?election=cfg-owner`);
    assert.equal(watch.status, 200);
    const snap = await watch.next();
    assert.equal(snap.event, 'snapshot');
    assert.deepEqual(snap.data.entries, [{ key: 'cfg/a', value: 'one', encoding: 'utf8', revision: snap.data.entries[0].revision }]);
    assert.equal(snap.data.more, false, 'one page holds it all');
    const osnap = await observe.next();
    assert.equal(osnap.event, 'snapshot');
    assert.equal(osnap.data.leader, null);

    await call(f2!, 'POST', '/v1/kv/put', { session: s, seq: 2, key: 'cfg/b', value: 'two' });
    await call(f2!, 'POST', '/v1/kv/put', { session: s, seq: 3, key: 'other/x', value: 'not watched' });
    const b = await watch.next();
    assert.equal(b.event, 'kvChanged');
    assert.equal(b.data.key, 'cfg/b');
    assert.equal(b.data.value, 'two');
    assert.equal(b.data.encoding, 'utf8');
    assert.equal(b.data.valueBase64, undefined, 'a value is sent once');
    assert.equal(b.id, String(b.data.revision));
    const lead = (await call(f2!, 'POST', '/v1/election/campaign', { session: s, seq: 4, election: 'cfg-owner', value: 'n2' })).body;
    const changed = await observe.next();
    assert.equal(changed.event, 'electionChanged');
    assert.equal(changed.data.leader, s);
    assert.equal(changed.data.token, lead.token, 'tokens are decimal strings in events too');

    // The leader dies; the stream on a surviving node goes on with the new leader's entries.
    await c.signal(leaderId, 'SIGKILL');
    await c.waitForLeader(15_000, [leaderId]);
    const del = await call(f2!, 'POST', '/v1/kv/delete', { session: s, seq: 5, key: 'cfg/a' });
    assert.equal(del.status, 200, JSON.stringify(del.body));
    const gone = await watch.next();
    assert.equal(gone.event, 'kvChanged');
    assert.equal(gone.data.key, 'cfg/a');
    assert.deepEqual(Object.keys(gone.data).sort(), ['key', 'revision'], 'a deletion carries no value and no encoding');
    watch.close();
    observe.close();

    // A new stream (another node) resumes from its snapshot.
    const again = await openStream(`${f2}/v1/kv/watch?prefix=cfg/`);
    const resumed = await again.next();
    assert.deepEqual(resumed.data.entries.map((e: { key: string }) => e.key), ['cfg/b']);
    again.close();
  });
});
