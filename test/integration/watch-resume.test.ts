// Watches that resume, against a real 3-node cluster: a stream of writes (puts, and txns
// that change two keys at one revision) goes on while the leader is SIGKILLed, and three
// watchers connected to that leader resume elsewhere: the SDK, the real CLI (`palisade
// watch`), and an HTTP Server-Sent Events reader that reconnects to another node with
// Last-Event-ID. Each sees every change exactly once, in revision order. Then a resume from
// a revision the history no longer holds is refused with COMPACTED (CLI, HTTP, SDK).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompactedError, LockClient, type KvChange } from '../../src/client/index.js';
import { palisadeAt, type CliRun } from '../support/cli-process.js';
import { TestCluster, until } from '../support/cluster.js';
import { call, httpBase } from '../http/http-client.js';

const text = new TextDecoder();

/** A change as every watcher reports it. */
type Seen = readonly [key: string, revision: number];

/** An SSE reader of /v1/kv/watch that, when its stream ends, reconnects to the next node with
 *  Last-Event-ID (as an EventSource does). */
class SseWatcher {
  readonly seen: Seen[] = [];
  lastId: string | null = null;
  reconnects = 0;
  private stopped = false;
  private readonly ac = new AbortController();

  constructor(
    private readonly bases: string[],
    private readonly prefix: string,
  ) {}

  async run(): Promise<void> {
    for (let i = 0; !this.stopped; i++) {
      const base = this.bases[i % this.bases.length]!;
      try {
        const res = await fetch(`${base}/v1/kv/watch?prefix=${encodeURIComponent(this.prefix)}`, {
          signal: this.ac.signal,
          headers: this.lastId === null ? {} : { 'last-event-id': this.lastId },
        });
        if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
        let buf = '';
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += text.decode(chunk, { stream: true });
          for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
            this.onBlock(buf.slice(0, end));
            buf = buf.slice(end + 2);
          }
        }
      } catch (e) {
        if (this.stopped) return;
        if (!(e instanceof TypeError) && !/terminated|ECONNRE|fetch failed|other side closed/.test(String(e))) throw e;
      }
      if (!this.stopped) this.reconnects++;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private onBlock(block: string): void {
    let event = '';
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) this.lastId = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (event === 'kvChanged') {
      const d = JSON.parse(data) as { key: string; revision: number };
      this.seen.push([d.key, d.revision]);
    }
  }

  stop(): void {
    this.stopped = true;
    this.ac.abort();
  }
}

describe('watches resume across a leader SIGKILL', () => {
  let c: TestCluster;
  const clients: LockClient[] = [];
  const runs: CliRun[] = [];

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    for (const r of runs) r.p.kill('SIGKILL');
    await Promise.all(clients.map((x) => x.close().catch(() => {})));
    await c?.stop();
  });

  test('the SDK, the CLI and an SSE reader each see every revision exactly once, in order', async () => {
    const leader = await c.waitForLeader();
    const leaderUrl = c.node(leader).clientUrl;
    const others = c.nodes.filter((n) => n.id !== leader).map((n) => n.clientUrl);

    // Every watcher starts on the leader, so that the kill takes its connection.
    const sdk = await LockClient.connect({ endpoints: [leaderUrl, ...others] });
    clients.push(sdk);
    const watch = sdk.watch('stream/');
    await watch.ready;
    const sdkSeen: Seen[] = [];
    const sdkDone = (async () => {
      for await (const ch of watch) sdkSeen.push([ch.key, ch.revision] as const);
    })();
    const cli = palisadeAt([leaderUrl, ...others], ['watch', 'stream/', '--json']);
    runs.push(cli);
    await until(() => /watching/.test(cli.errors()), 15_000, 'the CLI watch to start');
    const sse = new SseWatcher([httpBase(leaderUrl), ...others.map(httpBase)], 'stream/');
    const sseDone = sse.run();
    await until(() => sse.lastId, 10_000, 'the SSE snapshot');

    // The writer, on every node; its answers are the truth: each change and its revision.
    const writer = await LockClient.connect({ endpoints: others });
    clients.push(writer);
    const expected: Seen[] = [];
    const write = async (i: number): Promise<void> => {
      if (i % 7 === 3) {
        const a = `stream/t${i}-a`;
        const b = `stream/k${i % 4}`;
        const out = await writer.txn({ success: [{ op: 'put', key: a, value: String(i) }, { op: 'put', key: b, value: String(i) }] });
        expected.push([a, out.revision], [b, out.revision]);
      } else {
        const key = `stream/k${i % 4}`;
        const { revision } = await writer.put(key, String(i));
        expected.push([key, revision]);
      }
    };
    let i = 0;
    for (; i < 40; i++) await write(i);
    const killed = c.signal(leader, 'SIGKILL');
    for (; i < 120; i++) await write(i);
    await killed;

    const last = expected.at(-1)![1];
    const upTo = (seen: readonly Seen[]): boolean => seen.some(([, r]) => r === last) && seen.length >= expected.length;
    await until(() => upTo(sdkSeen), 20_000, 'the SDK watcher to catch up');
    await until(() => upTo(sse.seen), 20_000, 'the SSE watcher to catch up');
    const cliSeen = (): Seen[] =>
      cli
        .output()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { key: string; revision: number })
        .map((l) => [l.key, l.revision] as const);
    await until(() => upTo(cliSeen()), 20_000, 'the CLI watcher to catch up');

    assert.deepEqual(sdkSeen, expected, 'SDK: every change once, in order');
    assert.deepEqual(cliSeen(), expected, 'CLI: every change once, in order');
    assert.deepEqual(sse.seen, expected, 'SSE: every change once, in order');
    assert.ok(sse.reconnects >= 1, 'the SSE reader lost its stream with the leader and resumed');
    assert.notEqual(sdk.connectedUrl, leaderUrl);
    watch.close();
    sse.stop();
    await Promise.all([sdkDone, sseDone]);
  });

  test('a resume from a revision the history dropped is refused with COMPACTED (CLI, HTTP, SDK)', async () => {
    await c.start((await missingNode())!).catch(() => {});
    await c.waitForLeader();
    const set = await palisadeAt(c.endpoints, ['config', 'set', 'watch.historyEntries=5']).done;
    assert.equal(set.code, 0, set.err);
    const writer = await LockClient.connect({ endpoints: c.endpoints });
    clients.push(writer);
    const first = await writer.put('old/a', '1');
    for (let i = 0; i < 8; i++) await writer.put(`old/k${i}`, String(i));

    const base = httpBase(c.endpoints[0]!);
    const gone = await call(base, 'GET', `/v1/kv/watch?prefix=old/&fromRevision=${first.revision}`);
    assert.equal(gone.status, 410, JSON.stringify(gone.body));
    assert.equal(gone.body.error.code, 'COMPACTED');
    assert.match(gone.body.error.message, /resume from \d+ or later/);

    const cli = await palisadeAt(c.endpoints, ['watch', 'old/', '--from-revision', String(first.revision)]).done;
    assert.equal(cli.code, 66, cli.err);
    assert.match(cli.err, /no longer holds every change after revision/);

    const stream = writer.watch('old/', { fromRevision: first.revision });
    await assert.rejects(stream.ready, (e: unknown) => e instanceof CompactedError && e.compactRevision > first.revision);

    // A kept revision still resumes: the changes after it, in order.
    const recent = (await writer.put('old/z', 'z')).revision;
    const ok = writer.watch('old/', { fromRevision: recent - 1 });
    const next = await ok.next();
    assert.deepEqual([(next.value as KvChange).key, (next.value as KvChange).revision], ['old/z', recent]);
    ok.close();
  });

  /** The node the first test killed, if any. */
  async function missingNode(): Promise<string | undefined> {
    return c.nodes.find((n) => !c.procs.has(n.id))?.id;
  }
});
