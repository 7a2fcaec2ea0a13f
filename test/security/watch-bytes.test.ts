// What a watch and a backup cost when the key-value space is full of large values that JSON
// cannot carry as text (200 values of 65,000 bytes of 0x01, 13 MB; the limits are set to
// 4 MiB of unread bytes per client, so the state is well past what one answer may carry):
//   - an SSE watch sends each value once (base64, its encoding stated), in pages, and a
//     reader that stops reading is cut instead of buffered for (it cost a follower 1.5 GB);
//   - a websocket watch's first read reaches a reading client whole (it was built in one
//     frame, over the client's bound, and the client was cut);
//   - a connection that watches overlapping prefixes gets each change once;
//   - `palisade snapshot save` works (its answer was one frame, over the bound).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CLI, TestCluster, sleep } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';

const run = promisify(execFile);
const VALUES = 200;
const VALUE_BYTES = 65_000;

/** Resident set size of a process now (VmRSS), in MB. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

describe('watches and backups of a key-value space full of large binary values', { timeout: 240_000 }, () => {
  let c: TestCluster;
  let follower: string;

  before(async () => {
    c = await TestCluster.started({ extraConfig: { limits: { maxBufferedBytes: 4 << 20 } } });
    const leader = await c.waitForLeader();
    follower = c.nodes.find((n) => n.id !== leader)!.id;
    const w = await RawClient.connect(c.node(leader).clientUrl);
    try {
      const session = (await w.ok({ op: 'openSession', ttlMs: 60_000 })).session as number;
      const value = new Uint8Array(VALUE_BYTES).fill(0x01);
      for (let i = 0; i < VALUES; i++) await w.ok({ op: 'put', session, seq: i + 1, ackedSeq: i, key: `t/${String(i).padStart(4, '0')}`, value });
    } finally {
      w.close();
    }
  });

  after(() => c?.stop());

  test('an SSE watch sends each value once, base64, in pages of the snapshot', async () => {
    const base = c.node(follower).clientUrl.replace(/^ws/, 'http');
    const ac = new AbortController();
    const res = await fetch(`${base}/v1/kv/watch?prefix=t/`, { signal: ac.signal });
    let text = '';
    let bytes = 0;
    const entries: { key: string; value: string; encoding: string }[] = [];
    const decoder = new TextDecoder();
    let done = false;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      text += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        // An event's fields, one a line (the last page also carries an id).
        const lines = block.split('\n');
        if (!lines.includes('event: snapshot')) continue;
        const page = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as { entries: typeof entries; more: boolean };
        entries.push(...page.entries);
        if (!page.more) done = true;
      }
      if (done) break;
    }
    ac.abort();
    assert.ok(done, 'the last page says more: false');
    assert.equal(entries.length, VALUES);
    for (const e of entries) {
      assert.deepEqual(Object.keys(e).sort(), ['encoding', 'key', 'revision', 'value'], 'a value is sent once, with its encoding');
      assert.equal(e.encoding, 'base64', 'control bytes are not sent as JSON escapes');
      assert.ok(Buffer.from(e.value, 'base64').equals(Buffer.alloc(VALUE_BYTES, 0x01)));
    }
    // Base64 costs 4/3 of the values; keys, revisions and framing a little more.
    assert.ok(bytes < VALUES * VALUE_BYTES * 1.4, `the snapshot took ${bytes} bytes for ${VALUES * VALUE_BYTES} bytes of values`);
  });

  test('an SSE reader that stops reading during the snapshot is cut, and costs the node little memory', async () => {
    const node = c.node(follower);
    const pid = c.pid(follower);
    const before = rssMb(pid);
    const url = new URL(node.clientUrl.replace(/^ws/, 'http'));
    const socket: Socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.pause(); // reads nothing
    socket.write(`GET /v1/kv/watch?prefix=t/ HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    let peak = before;
    for (let waited = 0; waited < 15_000; waited += 250) {
      await sleep(250);
      peak = Math.max(peak, rssMb(pid));
    }
    // Now read what the node sent: if it cut the stream, the data ends; a stream it kept
    // would go on to the whole snapshot and stay open.
    let received = 0;
    const ended = new Promise<boolean>((resolve) => {
      socket.on('data', (d: Buffer) => (received += d.length));
      socket.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 10_000);
    });
    socket.resume();
    const cut = await ended;
    socket.destroy();
    assert.ok(cut, `the node kept a stream nobody read for 15 s open (${received} bytes sent)`);
    assert.ok(received < VALUES * VALUE_BYTES, `it was cut before the whole snapshot (${received} bytes)`);
    assert.ok(peak - before < 64, `the node's RSS grew ${Math.round(peak - before)} MB for one unread stream (${Math.round(before)} -> ${Math.round(peak)} MB)`);
  });

  test('a websocket watch of the whole space reaches a reading client, whole', async () => {
    const w = await RawClient.connect(c.node(follower).clientUrl);
    try {
      const r = await w.call({ op: 'watch', prefix: 't/' }, 30_000);
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal((r.result as unknown[]).length, VALUES);
    } finally {
      w.close();
    }
  });

  test('a connection watching overlapping prefixes gets each change once', async () => {
    const leader = await c.waitForLeader();
    const watcher = await RawClient.connect(c.node(follower).clientUrl);
    const writer = await RawClient.connect(c.node(leader).clientUrl);
    try {
      const key = `o/${'a'.repeat(60)}`;
      for (let n = 2; n <= key.length; n++) assert.ok((await watcher.call({ op: 'watch', prefix: key.slice(0, n) })).ok);
      const session = (await writer.ok({ op: 'openSession', ttlMs: 30_000 })).session as number;
      await writer.ok({ op: 'put', session, seq: 1, key, value: new Uint8Array([1]) });
      await writer.ok({ op: 'put', session, seq: 2, key: 'o/b', value: new Uint8Array([2]) });
      // o/b matches one prefix (o/): its event is the marker that every earlier event arrived.
      await watcher.nextEvent((e) => e.event === 'kvChanged' && e.key === 'o/b', 5_000);
      assert.equal(watcher.events.filter((e) => e.event === 'kvChanged' && e.key === key).length, 1);
    } finally {
      watcher.close();
      writer.close();
    }
  });

  test('palisade snapshot save writes the whole state, and inspect verifies it', async () => {
    const file = join(c.dir, 'full.palisade');
    const saved = await run(process.execPath, [CLI, 'snapshot', 'save', file, '--endpoints', c.node(follower).clientUrl], { maxBuffer: 1 << 20 });
    assert.match(saved.stdout, /^saved /);
    const out = await run(process.execPath, [CLI, 'snapshot', 'inspect', file, '--json', '--config', c.configPath], { maxBuffer: 16 << 20 });
    const s = JSON.parse(out.stdout) as { keys: { key: string; bytes: number }[]; hmac: string };
    assert.equal(s.keys.filter((k) => k.key.startsWith('t/') && k.bytes === VALUE_BYTES).length, VALUES);
    assert.equal(s.hmac, 'verified');
  });
});
