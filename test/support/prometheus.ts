// Debian's Prometheus binaries (the `prometheus` package, which scripts/test-deps.sh installs)
// and the alert rules the repository ships, for the tests of those rules.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './node-process.js';

export const RULES = join(ROOT, 'ops/prometheus-alerts.yml');

export const NO_PROMETHEUS = "Debian's prometheus package is not installed (apt-get install prometheus; scripts/test-deps.sh does)";

/** A binary on the PATH (or Debian's place for it), or null. */
export function binary(name: string): string | null {
  for (const p of [`/usr/bin/${name}`, `/usr/local/bin/${name}`]) if (existsSync(p)) return p;
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() !== '' ? which.stdout.trim() : null;
}
