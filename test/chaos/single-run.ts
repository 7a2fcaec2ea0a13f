// One seeded chaos run: a cluster behind fault proxies, client processes running the
// workload, the nemesis injecting the seed's faults; then heal, measure recovery, stop the
// clients, check the final state and the history; write it all under test-results/chaos/.
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, formatReport, type CheckResult } from './checker/index.js';
import { ChaosCluster, type ClusterTiming } from './cluster.js';
import { ClientFleet } from './clients.js';
import { checkConvergence, checkFinalState, highestAcknowledgedToken } from './final-state.js';
import { Nemesis, planFaults, type FaultKind } from './nemesis.js';
import { ClusterProbe, type Availability } from './probe.js';
import { HeartbeatClient, type HeartbeatResult } from './heartbeat.js';
import { analyseOutages, faultSpans, leaderChangesFromLogs, type OutageReport } from './outage.js';
import { absoluteNowMs, runClock, WORKLOAD, workloadLocks } from './protocol.js';
import { HistoryRecorder, type RecordedOperation } from './recorder.js';
import { FencedResources } from './resources.js';
import { formatRunSummary, seconds, windowContext } from './summary.js';
import { writeFile } from 'node:fs/promises';

export interface RunOptions {
  readonly seed: number;
  readonly nodes: number;
  /** How long the nemesis injects faults. */
  readonly durationMs: number;
  /** Where this run's directory goes (test-results/chaos). */
  readonly resultsDir: string;
  /** The `palisade` entry point the nodes run. */
  readonly cli: string;
  /** Keep node and client logs even when the run passes. */
  readonly keepLogs: boolean;
  /** Print progress lines as the run goes. */
  readonly log: (line: string) => void;
  /**
   * The harness's self-test: clients trust their leases a TTL past the server's deadline
   * and the nemesis only pauses clients. The run passes when the checker catches it.
   */
  readonly plantOptimisticLeases?: boolean;
}

export interface RunResult {
  readonly seed: number;
  readonly nodes: number;
  readonly durationMs: number;
  readonly passed: boolean;
  /** One line per reason the run failed. */
  readonly problems: readonly string[];
  readonly dir: string;
  readonly operations: number;
  readonly outcomes: Readonly<Record<'ok' | 'fail' | 'unknown', number>>;
  readonly faults: ReadonlyMap<FaultKind, number>;
  readonly availability: Availability | null;
  readonly recoveryMs: number | null;
  readonly fencedRejected: number;
  /** What each fault cost the heartbeat client (null when it did not run). */
  readonly outages: OutageReport | null;
  readonly heartbeat: HeartbeatResult | null;
}

export const TTL_MS = 3_000;

const TIMING: ClusterTiming = {
  raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 },
  sessions: { defaultTtlMs: TTL_MS, minTtlMs: 1_000, maxTtlMs: 60_000, lockDelayMs: 0 },
  // Small, so that runs take snapshots and restarted nodes catch up by InstallSnapshot.
  snapshot: { entries: 1_000, keepTail: 200 },
};

/** After the final heal, the cluster must elect a leader and commit a write within this. */
export const RECOVERY_BOUND_MS = 15_000;
/** Clients keep working this long after recovery, on a healthy cluster. */
const SETTLE_MS = 3_000;
const STOP_CLIENTS_TIMEOUT_MS = 30_000;
/** A session a client could not close expires within its TTL, plus a new leader's grace. */
const FINAL_STATE_BOUND_MS = 2 * TTL_MS + 5_000;
const CONVERGENCE_BOUND_MS = 10_000;

export function replayCommand(seed: number, nodes: number, durationMs: number, selfTest = false): string {
  return `npm run test:chaos -- --seed ${seed} --nodes ${nodes} --duration ${Math.round(durationMs / 1000)}${selfTest ? ' --self-test' : ''}`;
}

export function clientsFor(nodes: number): number {
  return nodes <= 3 ? 4 : 5;
}

/** What the live part of a run leaves behind for judging. */
interface Observed {
  readonly problems: string[];
  readonly faults: ReadonlyMap<FaultKind, number>;
  readonly availability: Availability | null;
  readonly recoveryMs: number | null;
  readonly clockSlackMs: number;
  readonly heartbeat: HeartbeatResult | null;
  readonly originAbsMs: number;
  readonly endMs: number;
}

export async function runOnce(options: RunOptions): Promise<RunResult> {
  const { seed, nodes, durationMs, log } = options;
  const dir = join(options.resultsDir, `${nodes}n-seed${seed}${options.plantOptimisticLeases ? '-self-test' : ''}`);
  const logDir = join(dir, 'logs');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const recorder = new HistoryRecorder();
  const resources = new FencedResources();

  const observed = await operate(options, logDir, recorder, resources);
  const history = recorder.operations();
  const outages = observed.heartbeat === null ? null : heartbeatOutages(observed, recorder, logDir);
  if (observed.heartbeat !== null) {
    const lines = observed.heartbeat.log.map((a) => JSON.stringify(a)).join('\n');
    await writeFile(join(dir, 'heartbeat.jsonl'), lines + '\n', 'utf8');
  }
  const historyPath = join(dir, 'history.jsonl');
  await recorder.writeJsonl(historyPath, history);
  if (recorder.malformed.length > 0) observed.problems.push(`harness failure: malformed records: ${recorder.malformed.slice(0, 5).join('; ')}`);

  log(`seed ${seed}: checking ${history.length} operations`);
  const { result, problems } = judge(history, observed.problems, options.plantOptimisticLeases === true);
  const passed = problems.length === 0;
  const summary = formatRunSummary({
    seed,
    nodes,
    clients: clientsFor(nodes),
    durationMs,
    history,
    faults: observed.faults,
    availability: observed.availability ?? { unavailableMs: 0, longestGapMs: 0, gaps: [] },
    recoveryMs: observed.recoveryMs,
    fencedAccepted: resources.accepted,
    fencedRejected: resources.rejectedTotal,
    sessions: history.filter((o) => o.op === 'sessionExpired').length,
    clockSlackMs: observed.clockSlackMs,
    check: result === null ? null : result.stats,
    outages,
    heartbeat: observed.heartbeat,
    verdict: `${passed ? 'PASS' : 'FAIL'}${options.plantOptimisticLeases ? ' (self-test: the planted lease bug must be caught)' : ''}`,
  });
  const parts = [summary];
  if (result !== null && result.valid === false) {
    parts.push('', formatReport(history, result), '', windowContext(result.window as RecordedOperation[], recorder.faults, recorder.notes));
  }
  if (!passed) {
    parts.push('', 'problems:', ...problems.map((p) => `  - ${p}`), '', `history: ${historyPath}`, `logs: ${logDir}`);
    parts.push(`replay: ${replayCommand(seed, nodes, durationMs, options.plantOptimisticLeases)}`);
  }
  const report = parts.join('\n');
  await writeFile(join(dir, 'report.txt'), report + '\n', 'utf8');
  if (passed && !options.keepLogs) rmSync(logDir, { recursive: true, force: true });
  log(report);

  const outcomes = { ok: 0, fail: 0, unknown: 0 };
  for (const op of history) outcomes[op.outcome]++;
  return {
    seed,
    nodes,
    durationMs,
    passed,
    problems,
    dir,
    operations: history.length,
    outcomes,
    faults: observed.faults,
    availability: observed.availability,
    recoveryMs: observed.recoveryMs,
    fencedRejected: resources.rejectedTotal,
    outages,
    heartbeat: observed.heartbeat,
  };
}

/** The heartbeat's gaps against the faults, with the elections the node logs record. */
function heartbeatOutages(observed: Observed, recorder: HistoryRecorder, logDir: string): OutageReport {
  const logs = readdirSync(logDir)
    .filter((f) => /^n\d+\.log$/.test(f))
    .map((f) => ({ node: f.replace(/\.log$/, ''), text: readFileSync(join(logDir, f), 'utf8') }));
  const changes = leaderChangesFromLogs(logs, observed.originAbsMs);
  return analyseOutages(observed.heartbeat!.successes, faultSpans(recorder.faults, observed.endMs), changes);
}

/** The live run: start everything, inject the faults, heal, stop, check the final state. */
async function operate(options: RunOptions, logDir: string, recorder: HistoryRecorder, resources: FencedResources): Promise<Observed> {
  const { seed, nodes, durationMs, log } = options;
  const dataDir = join(tmpdir(), `palisade-chaos-${process.pid}-${nodes}n-${seed}`);
  const originAbsMs = absoluteNowMs();
  const now = runClock(originAbsMs);
  const problems: string[] = [];
  const clientCount = clientsFor(nodes);
  let cluster: ChaosCluster | null = null;
  let fleet: ClientFleet | null = null;
  let spawning: Promise<ClientFleet> | null = null;
  let probe: ClusterProbe | null = null;
  let heartbeat: HeartbeatClient | null = null;
  let heartbeatResult: HeartbeatResult | null = null;
  let nemesis: Nemesis | null = null;
  let availability: Availability | null = null;
  let recoveryMs: number | null = null;
  let clockSlackMs = 0;

  try {
    log(`seed ${seed}: starting ${nodes} nodes behind ${nodes * (nodes - 1)} link proxies, and ${clientCount} client processes`);
    // The client processes take a while to boot (tsx): let them while the cluster starts.
    spawning = ClientFleet.spawn({ count: clientCount, logDir, recorder, resources, now });
    spawning.catch(() => {});
    cluster = await ChaosCluster.create({ nodes, dataDir, logDir, cli: options.cli, ...TIMING });
    await cluster.startAll();
    await cluster.waitForLeader(20_000);
    fleet = await spawning;
    // Windows are widened by the measured disagreement of the clocks, plus a millisecond.
    clockSlackMs = Math.ceil(await fleet.measureClockSkew()) + 1;
    const endpoints = cluster.endpoints;
    await fleet.startAll((process, i) => ({
      process,
      seed: (seed * 1_000 + i + 1) >>> 0,
      endpoints,
      ttlMs: TTL_MS,
      originAbsMs,
      clockSlackMs,
      shape: WORKLOAD,
      ...(options.plantOptimisticLeases ? { safetyMarginMs: -TTL_MS } : {}),
    }));
    probe = new ClusterProbe(endpoints, workloadLocks(), WORKLOAD.election, recorder, now);
    await probe.connect();
    probe.start();
    heartbeat = new HeartbeatClient(endpoints, TTL_MS, now);
    await heartbeat.connect();
    heartbeat.start();

    const plan = planFaults({ seed, runMs: durationMs, ttlMs: TTL_MS, ...(options.plantOptimisticLeases ? { kinds: ['pause-client'] } : {}) });
    log(`seed ${seed}: cluster and clients up after ${seconds(now())}; ${plan.length} faults planned over ${seconds(durationMs)}`);
    nemesis = new Nemesis(cluster, fleet, (kind, phase, detail, role) => {
      recorder.fault(kind, phase, now(), detail, role);
      if (phase === 'start') log(`  ${(now() / 1000).toFixed(1).padStart(6)} s  ${kind}: ${detail}`);
    });
    const nemesisStarted = performance.now();
    await nemesis.run(plan);
    // The last fault may end early: the clients get the rest of the duration anyway.
    await sleepMs(durationMs - (performance.now() - nemesisStarted));

    await cluster.healAll();
    fleet.resumeAll();
    const healedMs = now();
    recorder.note('harness', healedMs, 'final heal: every link healed, every process running');
    await cluster.waitForLeader(RECOVERY_BOUND_MS).catch(() => null);
    recoveryMs = await probe.timeToServeWrites(healedMs, RECOVERY_BOUND_MS);
    if (recoveryMs === null) {
      const states = (await cluster.statuses(1_000)).map(
        (st) => `${st.id} ${st.role} term ${st.term} leader ${st.leader ?? '-'} commit ${st.commitIndex} applied ${st.appliedIndex}`,
      );
      problems.push(`recovery: no write went through the log within ${RECOVERY_BOUND_MS} ms of the final heal (${states.join('; ') || 'no node answered'})`);
    }
    await sleepMs(SETTLE_MS);

    await probe.stopProbing();
    availability = probe.availability();
    heartbeatResult = await heartbeat.stop();
    const killed = await fleet.stopAll(STOP_CLIENTS_TIMEOUT_MS);
    if (killed.length > 0) recorder.note('harness', now(), `clients ${killed.join(', ')} did not stop in time and were killed`);

    problems.push(...(await checkFinalState(probe, workloadLocks(), FINAL_STATE_BOUND_MS)));
    problems.push(...(await checkConvergence(cluster, highestAcknowledgedToken(recorder.completed), CONVERGENCE_BOUND_MS)));
  } catch (e) {
    problems.push(`harness failure: ${(e as Error).stack ?? String(e)}`);
  } finally {
    await probe?.stopProbing().catch(() => {});
    await probe?.close().catch(() => {});
    if (heartbeatResult === null) await heartbeat?.stop().catch(() => {});
    (fleet ?? (await spawning?.catch(() => null)))?.killAll();
    await cluster?.stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
  return {
    problems,
    faults: nemesis?.injected ?? new Map(),
    availability,
    recoveryMs,
    clockSlackMs,
    heartbeat: heartbeatResult,
    originAbsMs,
    endMs: now(),
  };
}

/** The checker's verdict, folded into the run's problems (inverted for the self-test). */
function judge(history: readonly RecordedOperation[], observed: readonly string[], planted: boolean): { result: CheckResult | null; problems: string[] } {
  const problems = [...observed];
  let result: CheckResult | null = null;
  try {
    result = check(history, { maxMs: 60_000, shrinkMaxMs: 30_000 });
  } catch (e) {
    problems.push(`checker failure: ${(e as Error).message}`);
  }
  if (planted) {
    // The planted bug must be found, and nothing else may go wrong.
    if (result?.valid !== false) problems.push('self-test: clients trusted their leases past the server deadline, and the run did not notice');
    return { result, problems };
  }
  if (result?.valid === false) problems.unshift(`${result.check} violation on ${result.kind} "${result.lock}"`);
  if (result?.valid === 'unknown') problems.push(`inconclusive check: ${result.reason}`);
  return { result, problems };
}

function sleepMs(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}
