// In-process stand-ins for cluster nodes: real ws servers on 127.0.0.1 that speak the client
// protocol, backed by the server's own pieces instead of a re-implementation: requests are
// checked by parseRequest, writes become lock machine commands (commandFor), are applied by
// the real LockMachine and answered with answerFor; events are the ones the node pushes
// (pushedEvent: no `granted` for an immediate grant, no `released` for the holder's own
// release), routed by the node's Subscriptions under the same rules as request-dispatch.ts.
// The nodes share one machine, as a cluster with a perfect log would. What the fake leaves
// out is the consensus and the timing (nothing expires on its own: tests call expire()).
//
// The fault hooks are the fake's: each test can intercept any request to drop the
// connection, stay silent, answer with an error of its choice (NOT_LEADER, UNAVAILABLE ...),
// apply it and lose the answer, or push forged events in a chosen order.
import { Packr } from 'msgpackr';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { LockClient, type LockClientOptions } from '../../src/client/index.js';
import { DEFAULT_MACHINE_CONFIG, LockMachine, isMachineError, validateCommand, type Command, type MachineConfig, type Result } from '../../src/lockfsm/index.js';
import type { LockInfo, Request, ServerEvent, WireError } from '../../src/protocol/client-protocol.js';
import { isWriteRequest } from '../../src/protocol/ops.js';
import { parseRequest } from '../../src/protocol/validate.js';
import { Subscriptions, type EventSink } from '../../src/server/api/subscriptions.js';
import { TokenRegistry } from '../../src/server/api/auth.js';
import { answerFor, commandFor, freeLock, machineFail, pushedEvent, wireElection, wireLock } from '../../src/server/api/wire.js';
import { watchAnswer } from '../../src/server/api/watch-answer.js';

const packr = new Packr({ useRecords: false });

export type Req = { readonly id: number; readonly op: string } & Readonly<Record<string, unknown>>;
export type Answer = { ok: true; result: unknown } | { ok: false; error: WireError };
/** What an intercept decides: an answer, drop the connection, stay silent, or the default. */
export type Verdict = Answer | 'drop' | 'silent' | undefined;
export type Intercept = (req: Req, conn: FakeConn) => Verdict | Promise<Verdict>;

export const err = (code: WireError['code'], message: string = code, extra: Partial<WireError> = {}): Answer => ({
  ok: false,
  error: { code, message, ...extra },
});

/** The session TTL of an openSession that names none (the server's default). */
const DEFAULT_TTL_MS = 10_000;
/** The machine the fake runs: the defaults, but no lock-delay unless an acquire asks for it
 *  (a lock freed by an expiry goes to its next waiter at once) and short TTLs allowed. */
const FAKE_MACHINE: MachineConfig = { ...DEFAULT_MACHINE_CONFIG, defaultLockDelayMs: 0, minTtlMs: 1 };

let nextConnId = 1;

export class FakeConn implements EventSink {
  readonly id = nextConnId++;
  readonly node: FakeNode;
  readonly ws: WebSocket;
  constructor(node: FakeNode, ws: WebSocket) {
    this.node = node;
    this.ws = ws;
  }
  send(frame: unknown): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(packr.pack(frame));
  }
  pushEvent(e: ServerEvent): void {
    this.send(e);
  }
}

export class FakeNode {
  readonly id: string;
  readonly cluster: FakeCluster;
  url = '';
  readonly conns = new Set<FakeConn>();
  intercept: Intercept | null = null;
  /** The cluster this node's hello answers for (default the cluster's). */
  clusterId: string | null = null;
  /** The tokens this node can prove it holds when challenged, as a node with them in its `auth`
   *  section does (the server's TokenRegistry); null: none, as a node with auth off. */
  tokens: readonly string[] | null = null;
  /** The client URL this node proves for (default its own: a relay proves for another). */
  provesAs: string | null = null;
  private wss: WebSocketServer | null = null;

  constructor(cluster: FakeCluster, id: string) {
    this.cluster = cluster;
    this.id = id;
  }

  async start(port = 0): Promise<void> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    this.wss = wss;
    this.url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    wss.on('connection', (ws) => {
      const conn = new FakeConn(this, ws);
      this.conns.add(conn);
      ws.on('close', () => {
        this.conns.delete(conn);
        this.cluster.subs.dropConn(conn);
      });
      ws.on('message', (data: Buffer) => {
        const req = packr.unpack(data) as Req;
        void this.serve(req, conn);
      });
    });
  }

  /** Stops listening and cuts every connection (a crashed node). */
  async stop(): Promise<void> {
    this.dropConnections();
    const wss = this.wss;
    this.wss = null;
    if (wss) await new Promise<void>((resolve) => wss.close(() => resolve()));
  }

  dropConnections(): void {
    for (const c of this.conns) c.ws.terminate();
  }

  private async serve(req: Req, conn: FakeConn): Promise<void> {
    this.cluster.log.push({ node: this.id, req, conn });
    const verdict = this.intercept ? await this.intercept(req, conn) : undefined;
    if (verdict === 'silent') return;
    if (verdict === 'drop') {
      conn.ws.terminate();
      return;
    }
    const answer = verdict ?? this.cluster.apply(req, conn);
    conn.send(answer.ok ? { id: req.id, ok: true, result: answer.result } : { id: req.id, ok: false, error: answer.error });
  }
}

export class FakeCluster {
  readonly nodes: FakeNode[] = [];
  /** Every request every node received, in arrival order. */
  readonly log: { node: string; req: Req; conn: FakeConn }[] = [];
  /** The replicated state: production's lock machine. */
  readonly machine = new LockMachine(FAKE_MACHINE);
  /** Which connections want which events, as on a node. */
  readonly subs = new Subscriptions();
  /** The last log index (every write is one entry). */
  index = 0;
  /** What hello says about the leader. */
  leader: string | null = null;
  /** What hello says of the cluster and its members. */
  clusterId = 'test';
  members: { id: string; clientUrl: string }[] = [];

  private readonly clients: LockClient[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  static async start(n: number): Promise<FakeCluster> {
    const c = new FakeCluster();
    for (let i = 0; i < n; i++) {
      const node = new FakeNode(c, `n${i + 1}`);
      await node.start();
      c.nodes.push(node);
    }
    return c;
  }

  /** A cluster of n nodes that closes its clients, then itself, when the test ends. */
  static async forTest(t: TestContext, n = 1): Promise<FakeCluster> {
    const c = await FakeCluster.start(n);
    t.after(async () => {
      // A client on a fake clock that nobody advances any more may never finish closing.
      const closed = Promise.all(c.clients.map((client) => client.close()));
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000))]);
      await c.stop();
    });
    return c;
  }

  /** A connected client (closed at the end of the test); the first endpoint first unless random is given. */
  async client(options: Partial<LockClientOptions> = {}): Promise<LockClient> {
    const client = await LockClient.connect({ endpoints: this.urls, random: () => 0, ...options });
    this.clients.push(client);
    return client;
  }

  get urls(): string[] {
    return this.nodes.map((n) => n.url);
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** Requests of one op (optionally on one node), in arrival order. */
  requests(op: string, node?: string): Req[] {
    return this.log.filter((e) => e.req.op === op && (node === undefined || e.node === node)).map((e) => e.req);
  }

  // ---- views of the machine (what `get`, `leader` and `kvGet` answer) -------------------

  lock(name: string): LockInfo {
    const l = this.machine.lock(name);
    return l ? wireLock(l) : freeLock(name);
  }

  /** The lock's (first) holder, or null when it is free. */
  holder(name: string): LockInfo['holders'][number] | null {
    return this.lock(name).holders[0] ?? null;
  }

  waiters(name: string): LockInfo['waiters'] {
    return this.lock(name).waiters;
  }

  electionView(name: string): { election: string; leader: number | null; value: string | null; token: number | null } {
    return wireElection(name, this.machine.election(name));
  }

  /** Sessions queued as candidates of an election, next first. */
  candidates(name: string): readonly number[] {
    return this.machine.election(name)?.candidates ?? [];
  }

  /** Whether `conn` would hear events of this session / election (the node's Subscriptions). */
  carries(conn: FakeConn, what: { session: number } | { election: string }): boolean {
    const sinks = 'session' in what ? this.subs.sessions.get(what.session) : this.subs.elections.get(what.election);
    return [...sinks].includes(conn);
  }

  // ---- what the leader's timers would propose ----------------------------------------------

  /** The session's lease ends on the leader: its locks go to the next waiters, its
   *  connections hear of it. */
  expire(session: number): void {
    this.commit({ type: 'expireSession', session });
  }

  /** Forge an event, routed as the node routes it. */
  push(e: ServerEvent): void {
    this.subs.route(e);
  }

  // ---- serving a request ---------------------------------------------------------------------

  /** Serve `req` on `conn` as a node does (request-dispatch.ts), minus consensus. */
  apply(raw: Req, conn: FakeConn): Answer {
    const parsed = parseRequest(raw);
    if ('error' in parsed) return { ok: false, error: parsed.error };
    const req: Request = parsed;
    const subs = this.subs;
    switch (req.op) {
      case 'hello': {
        const node = conn.node;
        const clusterId = node.clusterId ?? this.clusterId;
        if (req.challenge) {
          // A challenge hello, answered as request-dispatch.ts answers it, with the server's registry.
          const registry = node.tokens && new TokenRegistry(node.tokens.map((token, i) => ({ name: `t${i}`, token, prefixes: null, readOnly: false, admin: false })));
          const proof = registry?.prove(req.challenge.tokenId, req.challenge.nonce, clusterId, node.provesAs ?? node.url);
          if (proof === null) return err('UNAUTHENTICATED', 'no token of this cluster has the id in the challenge');
          return { ok: true, result: { nodeId: node.id, clusterId, leader: null, members: [], ...(proof ? { proof } : {}) } };
        }
        return { ok: true, result: { nodeId: node.id, clusterId, leader: this.leader, members: this.members } };
      }
      case 'status':
        return { ok: true, result: { id: conn.node.id, role: 'leader', term: 1, leader: this.leader, commitIndex: this.index, appliedIndex: this.index, members: [], pid: 0 } };
      case 'attach':
      case 'keepAlive': {
        const s = this.machine.session(req.session);
        if (!s) return err('UNKNOWN_SESSION', `session ${req.session} is not open (never opened, closed or expired)`);
        if (req.op === 'attach') subs.sessions.add(req.session, conn);
        return { ok: true, result: { ttlMs: s.ttlMs } };
      }
      case 'get':
        return { ok: true, result: this.lock(req.name) };
      case 'leader':
        return { ok: true, result: this.electionView(req.election) };
      case 'observe':
        subs.elections.add(req.election, conn);
        return { ok: true, result: this.electionView(req.election) };
      case 'unobserve':
        subs.elections.remove(req.election, conn);
        return { ok: true, result: {} };
      case 'kvGet': {
        const kv = this.machine.kvGet(req.key);
        return { ok: true, result: kv ? { key: kv.key, value: kv.value, revision: kv.revision } : null };
      }
      case 'watch':
        subs.watches.add(req.prefix, conn);
        return watchAnswer(this.machine, req);
      case 'unwatch':
        subs.watches.remove(req.prefix, conn);
        return { ok: true, result: {} };
      default: {
        if (!isWriteRequest(req)) return err('UNKNOWN_OP', `the fake cluster does not serve ${req.op}`);
        const cmd = validateCommand(commandFor(req, DEFAULT_TTL_MS, () => Date.now()), this.machine.settings);
        if (isMachineError(cmd)) return machineFail(cmd);
        const result = this.commit(cmd);
        const ans = answerFor(req.op, result, this.index);
        // Events for a session go to the connections that carry it (as request-dispatch.ts).
        if (ans.ok) {
          if (req.op === 'openSession') subs.sessions.add((ans.result as { session: number }).session, conn);
          else if ('session' in req) subs.sessions.add(req.session, conn);
          if (req.op === 'campaign') subs.elections.add(req.election, conn);
        }
        return ans;
      }
    }
  }

  /** Append `cmd` as the next entry (this.index) and apply it as the node's apply does:
   *  its events pushed, its result returned. */
  private commit(cmd: Command): Result {
    const index = ++this.index;
    const out = this.machine.apply(index, cmd);
    const answered = out.result.type === 'granted';
    for (const ev of out.events) {
      const e = pushedEvent(ev, index, answered);
      if (e) this.subs.route(e);
      if (ev.type === 'sessionClosed') this.subs.sessions.removeKey(ev.session);
      if (ev.type === 'lockDelayStarted') this.after(ev.delayMs, { type: 'lockDelayElapsed', name: ev.name, since: ev.since });
    }
    return out.result;
  }

  /** A leader's timer: propose `cmd` after `ms`. */
  private after(ms: number, cmd: Command): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.commit(cmd);
    }, ms);
    this.timers.add(t);
  }
}
