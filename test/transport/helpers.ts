// Shared helpers for the transport tests: a logger whose lines the test can inspect, a peer
// transport set up for tests, and waiting with a deadline (a test that waits forever is worse
// than one that fails).
import { setTimeout as sleep } from 'node:timers/promises';
import { pino, type Logger } from 'pino';
import { PeerTransport, type PeerTransportOptions } from '../../src/transport/peer.js';

export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

export const WARN = 40;

export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'debug', base: null },
    {
      write(line: string) {
        lines.push(JSON.parse(line) as LogLine);
      },
    },
  );
  return { logger, lines };
}

/**
 * A peer transport, not yet started, on a free loopback port with no peers yet, its log
 * captured, and reconnects and handshakes quick enough for a test to wait on.
 */
export function testPeerTransport(
  options: Pick<PeerTransportOptions, 'clusterId' | 'selfId' | 'secrets'> & Partial<PeerTransportOptions>,
): { t: PeerTransport; lines: LogLine[] } {
  const { logger, lines } = captureLogger();
  const t = new PeerTransport({
    listenHost: '127.0.0.1',
    listenPort: 0,
    peers: new Map(),
    logger,
    backoffMinMs: 10,
    backoffMaxMs: 100,
    handshakeTimeoutMs: 1000,
    ...options,
  });
  return { t, lines };
}

export async function waitFor(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
