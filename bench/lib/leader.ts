// Which node leads, as the nodes themselves say.
import { sleep } from './clock.js';
import { nodeStatus, type BenchNode } from './node-sampler.js';

export async function findLeader(nodes: readonly BenchNode[], timeoutMs = 10_000): Promise<BenchNode> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await Promise.all(nodes.map((n) => nodeStatus(n.clientUrl, 1_000)));
    const i = all.findIndex((s) => s?.role === 'leader');
    if (i >= 0) return nodes[i]!;
    if (Date.now() > deadline) throw new Error('no leader');
    await sleep(20);
  }
}
