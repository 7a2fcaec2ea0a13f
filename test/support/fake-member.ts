// A planted member: a websocket server on 127.0.0.1 that speaks just enough of the client
// protocol to pass for a node and hand out fake grants. It answers every hello as the leader
// of `clusterId` (a foreign one, or the real one copied: a cluster id is no secret), a challenge
// hello with a proof it cannot make (random bytes), attach and keepalives as if it knew every
// session, and every acquire and campaign with `grantToken`. It records every frame it is
// sent, so a test can tell whether a client gave it a token or a session.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { PROOF_BYTES } from '../../src/protocol/client-protocol.js';
import { freePort } from './node-process.js';

export interface FakeMemberOptions {
  /** The node id its hello says (the id it was planted under). */
  readonly nodeId: string;
  readonly clusterId: string;
  /** The fencing token of every grant it makes. */
  readonly grantToken: number;
}

export type Frame = Readonly<Record<string, unknown>> & { readonly op?: unknown };

export class FakeMember {
  readonly url: string;
  /** Every frame any client sent, in arrival order. */
  readonly frames: Frame[] = [];
  /** Connections accepted so far. */
  connections = 0;

  private constructor(
    private readonly wss: WebSocketServer,
    private readonly options: FakeMemberOptions,
  ) {
    this.url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  }

  static async start(options: FakeMemberOptions): Promise<FakeMember> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: await freePort() });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    const member = new FakeMember(wss, options);
    wss.on('connection', (ws) => {
      member.connections++;
      ws.on('message', (data: Buffer) => {
        let frame: Frame;
        try {
          frame = decodeFrame(data) as Frame;
        } catch {
          return;
        }
        member.frames.push(frame);
        const result = member.answer(frame);
        if (result !== undefined) ws.send(encodeFrame({ id: frame.id, ok: true, result }));
      });
    });
    return member;
  }

  /** Frames of one op. */
  sent(op: string): Frame[] {
    return this.frames.filter((f) => f.op === op);
  }

  /** Frames that carried a token (in a hello, the only place one goes). */
  get tokensReceived(): unknown[] {
    return this.frames.filter((f) => f.token !== undefined).map((f) => f.token);
  }

  close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    return new Promise((resolve) => this.wss.close(() => resolve()));
  }

  private answer(frame: Frame): unknown {
    const { nodeId, clusterId, grantToken } = this.options;
    switch (frame.op) {
      case 'hello':
        return {
          nodeId,
          clusterId,
          leader: nodeId,
          members: [{ id: nodeId, clientUrl: this.url }],
          timing: { heartbeatMs: 50, electionTimeoutMs: 300 },
          ...(frame.challenge === undefined ? {} : { proof: randomBytes(PROOF_BYTES) }),
        };
      case 'status':
        return { id: nodeId, role: 'leader', term: 1_000_000, leader: nodeId, commitIndex: grantToken, appliedIndex: grantToken, members: [nodeId], pid: 0 };
      case 'attach':
      case 'keepAlive':
        return { ttlMs: 60_000 };
      case 'openSession':
        return { session: grantToken, ttlMs: 60_000 };
      case 'acquire':
        return { status: 'granted', token: grantToken, index: grantToken };
      case 'campaign':
        return { status: 'leader', token: grantToken, index: grantToken };
      case 'get':
        return { name: frame.name, holders: [], waiters: [], limit: null, delayed: false };
      case undefined:
        return undefined;
      default:
        return {};
    }
  }
}
