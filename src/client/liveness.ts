// Noticing a silent node at the cluster's pace. A node that is paused (SIGSTOP), or cut off
// by a network that drops packets, keeps its TCP connection open and says nothing, so a
// request to it would wait out the whole attempt timeout. While requests are outstanding,
// the SDK pings the node (`status`, answered from memory, no permission needed) every two
// heartbeats; a node that has sent nothing for two election timeouts plus two heartbeats
// (700 ms at the defaults: by then the cluster has usually elected a new leader, so there is
// somewhere to go) is given up, and what was in flight is retried elsewhere with the same
// seq. A false alarm (a node whose event loop stalled) costs a reconnect, never
// correctness; the margin keeps false alarms rare on a loaded machine, where a reconnect
// storm would add load.
import type { HelloResult } from '../protocol/client-protocol.js';
import type { Clock, TimerHandle } from './clock.js';
import type { Connection } from './connection.js';

export interface Liveness {
  /** How often to ping while requests are outstanding. */
  readonly pingEveryMs: number;
  /** Silence (nothing received) after which the node is given up. */
  readonly silentAfterMs: number;
}

/** For nodes that do not say their timing (older versions): Palisade's defaults. */
const DEFAULT_TIMING = { heartbeatMs: 50, electionTimeoutMs: 300 };
/** Below this, a busy client or node would raise false alarms. */
const MIN_SILENCE_MS = 500;

export function livenessFor(hello: HelloResult | null): Liveness {
  const t = hello?.timing ?? DEFAULT_TIMING;
  return {
    pingEveryMs: Math.max(50, 2 * t.heartbeatMs),
    silentAfterMs: Math.max(MIN_SILENCE_MS, 2 * t.electionTimeoutMs + 2 * t.heartbeatMs),
  };
}

/**
 * Default time one attempt on one live node may take: a follower waits up to three
 * election timeouts for a leader before it answers UNAVAILABLE, so a little more than that.
 */
export function attemptTimeoutFor(hello: HelloResult | null): number {
  const t = hello?.timing ?? DEFAULT_TIMING;
  return 4 * t.electionTimeoutMs + 2 * t.heartbeatMs;
}

/** Watches `connection` until it closes; returns the function that stops watching. */
export function watchLiveness(connection: Connection, clock: Clock, liveness: Liveness): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  let pinging = false;
  /** When requests became outstanding: an idle spell before that is not silence. */
  let busySince: number | null = null;
  const tick = (): void => {
    timer = undefined;
    if (stopped || !connection.isOpen) return;
    const busy = connection.outstanding - (pinging ? 1 : 0) > 0;
    if (!busy) busySince = null;
    else busySince ??= clock.now();
    const silentFor = clock.now() - Math.max(connection.lastHeardAt, busySince ?? -Infinity);
    if (busy && silentFor > liveness.silentAfterMs) {
      connection.abandonSilent(`${connection.url} sent nothing for ${Math.round(silentFor)} ms`);
      return;
    }
    if (busy && !pinging && silentFor >= liveness.pingEveryMs) {
      pinging = true;
      // Any frame counts as a sign of life; the answer itself is not needed.
      void connection
        .request({ op: 'status' }, liveness.silentAfterMs)
        .catch(() => {})
        .finally(() => {
          pinging = false;
        });
    }
    timer = clock.setTimeout(tick, liveness.pingEveryMs);
  };
  timer = clock.setTimeout(tick, liveness.pingEveryMs);
  return () => {
    stopped = true;
    if (timer !== undefined) clock.clearTimeout(timer);
  };
}
