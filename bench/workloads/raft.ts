// raft: raw proposals through the log with `inFlight` in flight: one LockClient (one session,
// one connection) keeping that many unfenced `put`s outstanding, each its own key, each one
// Raft entry. Figures: proposals/s, put latency, entries per fsync batch on the leader (group
// commit) and leader-to-follower bytes per replicated entry copy.
import { performance } from 'node:perf_hooks';
import { closeClients, connectClients } from '../lib/clients.js';
import { LatencyRecorder, type LatencySummary } from '../lib/latency.js';
import { opCost, type OpCost, type WindowCost } from '../lib/node-sampler.js';
import type { WorkloadTiming } from '../lib/spec.js';
import { runLoopWindow } from '../lib/window.js';

export interface RaftSpec extends WorkloadTiming {
  readonly kind: 'raft';
  readonly inFlight: number;
  readonly valueBytes: number;
}

export interface RaftResult {
  readonly kind: 'raft';
  readonly inFlight: number;
  readonly valueBytes: number;
  readonly proposals: number;
  readonly proposalsPerSec: number;
  readonly putMs: LatencySummary;
  /** Δ entriesPersisted / Δ fsyncBatches on the leader. */
  readonly entriesPerFsyncBatch: number | null;
  /** Δ leader transport.bytesSent / (Δ committed entries × followers). */
  readonly wireBytesPerEntryCopy: number | null;
  readonly errors: number;
  readonly firstError: string | null;
  readonly window: WindowCost;
  readonly cost: OpCost;
}

export async function runRaft(spec: RaftSpec): Promise<RaftResult> {
  const [client] = await connectClients(spec.endpoints, 1);
  const value = new Uint8Array(spec.valueBytes).fill(0x61);
  const put = new LatencyRecorder();
  let proposals = 0;
  try {
    const w = await runLoopWindow({
      ...spec,
      workers: spec.inFlight,
      step: async (i, state) => {
        const key = `bench/raft/k${i}`;
        const a = performance.now();
        await client!.put(key, value);
        const b = performance.now();
        if (state.phase === 'measure') {
          put.push(b - a);
          proposals++;
        }
      },
    });
    const followers = spec.nodes.length - 1;
    const c = w.cost;
    return {
      kind: 'raft',
      inFlight: spec.inFlight,
      valueBytes: spec.valueBytes,
      proposals,
      proposalsPerSec: proposals / (w.elapsedMs / 1000),
      putMs: put.summary(),
      entriesPerFsyncBatch: c.entriesPersisted !== null && c.fsyncBatches ? c.entriesPersisted / c.fsyncBatches : null,
      wireBytesPerEntryCopy: c.leaderBytesSent !== null && c.commits && followers > 0 ? c.leaderBytesSent / (c.commits * followers) : null,
      errors: w.errors,
      firstError: w.firstError,
      window: c,
      cost: opCost(c, proposals),
    };
  } finally {
    await closeClients(client ? [client] : []);
  }
}
