// In-process stand-ins for cluster nodes: real ws servers on 127.0.0.1 that speak the client
// protocol from a small scripted state table (sessions, exclusive locks with FIFO waiters,
// elections, kv, ledger, per-(session, seq) results). They test the SDK's logic, not the
// server: each test can intercept any request to drop the connection, stay silent, answer
// NOT_LEADER, or push events in a chosen order.
import { Packr } from 'msgpackr';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { LockClient, type LockClientOptions } from '../../src/client/index.js';
import type { ServerEvent, WireError } from '../../src/protocol/client-protocol.js';

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

export class FakeConn {
  readonly node: FakeNode;
  readonly ws: WebSocket;
  readonly sessions = new Set<number>();
  readonly elections = new Set<string>();
  readonly prefixes = new Set<string>();
  constructor(node: FakeNode, ws: WebSocket) {
    this.node = node;
    this.ws = ws;
  }
  send(frame: unknown): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(packr.pack(frame));
  }
}

export class FakeNode {
  readonly id: string;
  readonly cluster: FakeCluster;
  url = '';
  readonly conns = new Set<FakeConn>();
  intercept: Intercept | null = null;
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
      ws.on('close', () => this.conns.delete(conn));
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

interface LockRecord {
  holder: { session: number; token: number; mode: 'exclusive' | 'shared' } | null;
  waiters: { session: number; mode: 'exclusive' | 'shared' }[];
}
interface ElectionRecord {
  leader: { session: number; token: number; value: string } | null;
  candidates: { session: number; value: string }[];
}
interface OpRecord {
  state: 'running' | 'done';
  idempotencyKey: string;
  attempt: number;
  token: number;
  result: Uint8Array | null;
}

export class FakeCluster {
  readonly nodes: FakeNode[] = [];
  /** Every request every node received, in arrival order. */
  readonly log: { node: string; req: Req; conn: FakeConn }[] = [];
  index = 0;
  /** What hello says about the leader. */
  leader: string | null = null;
  readonly sessions = new Map<number, { ttlMs: number }>();
  readonly locks = new Map<string, LockRecord>();
  readonly elections = new Map<string, ElectionRecord>();
  readonly kv = new Map<string, { value: Uint8Array; revision: number }>();
  readonly ops = new Map<string, OpRecord>();
  /** Kept results per "session:seq": a retry gets the first answer. */
  readonly results = new Map<string, Answer>();
  /** How many times each "session:seq" was applied (not replayed). */
  readonly applied = new Map<string, number>();

  private readonly clients: LockClient[] = [];

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
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** Requests of one op (optionally on one node), in arrival order. */
  requests(op: string, node?: string): Req[] {
    return this.log.filter((e) => e.req.op === op && (node === undefined || e.node === node)).map((e) => e.req);
  }

  /** Pushes an event to every connection that carries its session / election / prefix. */
  push(e: ServerEvent): void {
    for (const node of this.nodes) {
      for (const c of node.conns) {
        const wants =
          'session' in e
            ? c.sessions.has(e.session)
            : e.event === 'electionChanged'
              ? c.elections.has(e.election)
              : [...c.prefixes].some((p) => e.key.startsWith(p));
        if (wants) c.send(e);
      }
    }
  }

  /** The session expires: its locks go to the next waiters, its connections hear of it. */
  expire(session: number): void {
    this.dropSession(session, 'expire');
    this.push({ event: 'sessionExpired', index: ++this.index, session });
  }

  apply(req: Req, conn: FakeConn): Answer {
    const r = req as Record<string, unknown>;
    const session = r.session as number;
    switch (req.op) {
      case 'hello':
        return { ok: true, result: { nodeId: conn.node.id, clusterId: 'test', leader: this.leader, members: [] } };
      case 'status':
        return { ok: true, result: { id: conn.node.id, role: 'leader', term: 1, leader: this.leader, commitIndex: this.index, appliedIndex: this.index, members: [], pid: 0 } };
      case 'openSession': {
        const id = ++this.index;
        const ttlMs = (r.ttlMs as number | undefined) ?? 10_000;
        this.sessions.set(id, { ttlMs });
        conn.sessions.add(id);
        return { ok: true, result: { session: id, ttlMs } };
      }
      case 'attach':
      case 'keepAlive': {
        const s = this.sessions.get(session);
        if (!s) return err('UNKNOWN_SESSION');
        if (req.op === 'attach') conn.sessions.add(session);
        return { ok: true, result: { ttlMs: s.ttlMs } };
      }
      case 'get': {
        const l = this.locks.get(r.name as string);
        return {
          ok: true,
          result: { name: r.name, holders: l?.holder ? [l.holder] : [], waiters: l?.waiters ?? [], limit: null, delayed: false },
        };
      }
      case 'leader':
        return { ok: true, result: this.electionView(r.election as string) };
      case 'observe':
        conn.elections.add(r.election as string);
        return { ok: true, result: this.electionView(r.election as string) };
      case 'unobserve':
        conn.elections.delete(r.election as string);
        return { ok: true, result: {} };
      case 'kvGet': {
        const e = this.kv.get(r.key as string);
        return { ok: true, result: e ? { key: r.key, value: e.value, revision: e.revision } : null };
      }
      case 'watch': {
        conn.prefixes.add(r.prefix as string);
        const entries = [...this.kv].filter(([k]) => k.startsWith(r.prefix as string)).map(([key, e]) => ({ key, value: e.value, revision: e.revision }));
        return { ok: true, result: entries };
      }
      case 'unwatch':
        conn.prefixes.delete(r.prefix as string);
        return { ok: true, result: {} };
      default: {
        // Session-scoped writes: answer a retry with the first answer.
        if (!this.sessions.has(session)) return err('UNKNOWN_SESSION');
        conn.sessions.add(session);
        const key = `${session}:${r.seq as number}`;
        const kept = this.results.get(key);
        if (kept) return kept;
        const answer = this.write(req, session);
        this.results.set(key, answer);
        this.applied.set(key, (this.applied.get(key) ?? 0) + 1);
        return answer;
      }
    }
  }

  private write(req: Req, session: number): Answer {
    const r = req as Record<string, unknown>;
    const fence = r.fence as { lock: string; token: number } | undefined;
    if (fence && this.locks.get(fence.lock)?.holder?.token !== fence.token) {
      return err('FENCED', 'fenced', { currentToken: this.locks.get(fence.lock)?.holder?.token ?? null });
    }
    switch (req.op) {
      case 'closeSession':
        this.dropSession(session, 'close');
        return { ok: true, result: { index: ++this.index } };
      case 'acquire': {
        const name = r.name as string;
        const mode = r.mode as 'exclusive' | 'shared';
        const lock = this.lockRecord(name);
        const index = ++this.index;
        if (lock.holder === null) {
          lock.holder = { session, token: index, mode };
          // As the node does: an immediate grant is told by the answer, not pushed again.
          return { ok: true, result: { status: 'granted', token: index, index } };
        }
        if (!r.wait) return { ok: true, result: { status: 'busy', holders: [lock.holder], index } };
        lock.waiters.push({ session, mode });
        return { ok: true, result: { status: 'queued', position: lock.waiters.length, index } };
      }
      case 'release': {
        const name = r.name as string;
        const lock = this.locks.get(name);
        if (!lock?.holder || lock.holder.session !== session || lock.holder.token !== r.token) return err('NOT_HOLDER');
        this.free(name, 'release');
        return { ok: true, result: { index: this.index } };
      }
      case 'cancelWait': {
        const lock = this.locks.get(r.name as string);
        const i = lock ? lock.waiters.findIndex((w) => w.session === session) : -1;
        if (lock && i >= 0) {
          lock.waiters.splice(i, 1);
          return { ok: true, result: { index: ++this.index } };
        }
        return err('CONFLICT', 'not waiting', { currentToken: lock?.holder?.token ?? null });
      }
      case 'campaign': {
        const e = this.electionRecord(r.election as string);
        const index = ++this.index;
        if (e.leader === null) {
          e.leader = { session, token: index, value: r.value as string };
          this.pushElection(r.election as string);
          return { ok: true, result: { status: 'leader', token: index, index } };
        }
        e.candidates.push({ session, value: r.value as string });
        return { ok: true, result: { status: 'queued', position: e.candidates.length, index } };
      }
      case 'proclaim': {
        const e = this.elections.get(r.election as string);
        if (!e?.leader || e.leader.session !== session || e.leader.token !== r.token) return err('NOT_HOLDER');
        e.leader.value = r.value as string;
        ++this.index;
        this.pushElection(r.election as string);
        return { ok: true, result: { index: this.index } };
      }
      case 'resign': {
        const e = this.elections.get(r.election as string);
        if (r.token === undefined) {
          // Without a token: a queued candidate withdraws.
          const i = e ? e.candidates.findIndex((c) => c.session === session) : -1;
          if (!e || i < 0) return err('CONFLICT', 'not a queued candidate');
          e.candidates.splice(i, 1);
          return { ok: true, result: { index: ++this.index } };
        }
        if (!e?.leader || e.leader.session !== session || e.leader.token !== r.token) return err('NOT_HOLDER');
        this.stepDown(r.election as string);
        return { ok: true, result: { index: this.index } };
      }
      case 'put': {
        const key = r.key as string;
        const cur = this.kv.get(key);
        if (r.ifRevision !== undefined && (cur?.revision ?? 0) !== r.ifRevision) return err('CONFLICT');
        const revision = ++this.index;
        this.kv.set(key, { value: r.value as Uint8Array, revision });
        this.push({ event: 'kvChanged', index: revision, key, value: r.value as Uint8Array, revision });
        return { ok: true, result: { revision, index: revision } };
      }
      case 'delete': {
        const key = r.key as string;
        const existed = this.kv.delete(key);
        const index = ++this.index;
        if (existed) this.push({ event: 'kvChanged', index, key, value: null, revision: index });
        return { ok: true, result: { existed, revision: existed ? index : 0, index } };
      }
      case 'beginOp': {
        const opKey = r.opKey as string;
        const token = (r.fence as { token: number }).token;
        const index = ++this.index;
        const op = this.ops.get(opKey);
        if (!op) {
          this.ops.set(opKey, { state: 'running', idempotencyKey: `ik-${opKey}`, attempt: 1, token, result: null });
          return { ok: true, result: { status: 'run', idempotencyKey: `ik-${opKey}`, attempt: 1, index } };
        }
        if (op.state === 'done') return { ok: true, result: { status: 'done', idempotencyKey: op.idempotencyKey, result: op.result, index } };
        if (r.retry === true || op.token === token) {
          op.attempt++;
          op.token = token;
          return { ok: true, result: { status: 'run', idempotencyKey: op.idempotencyKey, attempt: op.attempt, index } };
        }
        return { ok: true, result: { status: 'inDoubt', idempotencyKey: op.idempotencyKey, attempt: op.attempt, token: op.token, index } };
      }
      case 'completeOp': {
        const op = this.ops.get(r.opKey as string);
        if (!op) return err('CONFLICT');
        op.state = 'done';
        op.result = r.result as Uint8Array;
        return { ok: true, result: { idempotencyKey: op.idempotencyKey, index: ++this.index } };
      }
      default:
        return err('UNKNOWN_OP');
    }
  }

  private lockRecord(name: string): LockRecord {
    let l = this.locks.get(name);
    if (!l) this.locks.set(name, (l = { holder: null, waiters: [] }));
    return l;
  }

  private electionRecord(name: string): ElectionRecord {
    let e = this.elections.get(name);
    if (!e) this.elections.set(name, (e = { leader: null, candidates: [] }));
    return e;
  }

  electionView(name: string): { election: string; leader: number | null; value: string | null; token: number | null } {
    const l = this.elections.get(name)?.leader;
    return { election: name, leader: l?.session ?? null, value: l?.value ?? null, token: l?.token ?? null };
  }

  pushElection(name: string): void {
    const v = this.electionView(name);
    this.push({ event: 'electionChanged', index: this.index, election: name, leader: v.leader, value: v.value, token: v.token });
  }

  /** Frees `name` and grants it to the next waiter (each step its own index, as in the log). */
  free(name: string, reason: 'release' | 'close' | 'expire'): void {
    const lock = this.locks.get(name);
    if (!lock?.holder) return;
    const h = lock.holder;
    lock.holder = null;
    const index = ++this.index;
    // The holder's own release is told by its answer; a close or an expiry is pushed.
    if (reason !== 'release') this.push({ event: 'released', index, session: h.session, name, token: h.token, reason });
    const next = lock.waiters.shift();
    if (next) {
      const token = ++this.index;
      lock.holder = { session: next.session, token, mode: next.mode };
      this.push({ event: 'granted', index: token, session: next.session, name, token, mode: next.mode });
    }
  }

  private stepDown(name: string): void {
    const e = this.elections.get(name)!;
    const next = e.candidates.shift();
    const index = ++this.index;
    e.leader = next ? { session: next.session, token: index, value: next.value } : null;
    this.pushElection(name);
  }

  private dropSession(session: number, reason: 'close' | 'expire'): void {
    this.sessions.delete(session);
    for (const [name, lock] of this.locks) {
      lock.waiters = lock.waiters.filter((w) => w.session !== session);
      if (lock.holder?.session === session) this.free(name, reason);
    }
    for (const [name, e] of this.elections) {
      e.candidates = e.candidates.filter((c) => c.session !== session);
      if (e.leader?.session === session) this.stepDown(name);
    }
  }
}
