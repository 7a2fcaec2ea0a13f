// One case of a bench run: a fresh cluster, the workload's client process, the figures or
// why there are none.
import { BenchCluster } from './cluster.js';
import { driveFailover } from './failover-driver.js';
import { epochMs } from './lib/clock.js';
import type { BenchOptions } from './lib/options.js';
import type { BenchCase } from './plan.js';
import type { CaseOutcome } from './report.js';
import { WorkerHost } from './worker-host.js';

async function highestTerm(cluster: BenchCluster): Promise<number> {
  const all = await Promise.all(cluster.ids.map((id) => cluster.status(id)));
  return Math.max(0, ...all.map((s) => s?.term ?? 0));
}

/** One figure: a fresh cluster of the build at `build` (a checkout's root, see
 *  BenchCluster.create), the workload's client process, the cluster stopped whatever happens. */
export async function runCase(c: BenchCase, o: BenchOptions, build: string, log: (line: string) => void): Promise<CaseOutcome> {
  const started = epochMs();
  log(`${c.label}: starting a fresh cluster`);
  let cluster: BenchCluster;
  try {
    cluster = await BenchCluster.launch(build);
  } catch (e) {
    const error = `cluster did not start: ${e instanceof Error ? e.message : String(e)}`;
    log(`${c.label}: FAILED: ${error}`);
    return { workload: c.workload, label: c.label, seconds: (epochMs() - started) / 1000, result: null, error, terms: null };
  }
  const startTerm = await highestTerm(cluster);
  let host: WorkerHost | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    const h = new WorkerHost(c.spec(cluster.nodes(), cluster.endpoints), (line) => log(line));
    host = h;
    const work = (async () => {
      if (c.workload === 'failover') await driveFailover(cluster, h, o.tries, log);
      return h.result();
    })();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${o.caseTimeoutMs / 1000} s (--case-timeout)`)), o.caseTimeoutMs);
    });
    const result = await Promise.race([work, timeout]);
    const terms = { start: startTerm, end: await highestTerm(cluster) };
    return { workload: c.workload, label: c.label, seconds: (epochMs() - started) / 1000, result, error: null, terms };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    log(`${c.label}: FAILED: ${error}`);
    for (const id of cluster.ids) log(`--- ${id} log tail ---\n${cluster.logTail(id, 1_500)}`);
    host?.kill();
    const terms = { start: startTerm, end: await highestTerm(cluster) };
    return { workload: c.workload, label: c.label, seconds: (epochMs() - started) / 1000, result: null, error, terms };
  } finally {
    clearTimeout(timer);
    await cluster.stop({ keepData: o.keepData });
    if (o.keepData) log(`${c.label}: cluster data kept in ${cluster.dir}`);
  }
}
