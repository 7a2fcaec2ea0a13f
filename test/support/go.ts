// Running Debian's golang-go from tests: whether it is there, and an environment in which it
// works offline and as root (module mode, caches in a directory of the test's own).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const haveGo = spawnSync('go', ['version']).status === 0;

export function goEnv(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, GOFLAGS: '-mod=mod', GOCACHE: join(dir, 'gocache'), GOPATH: join(dir, 'gopath'), GOPROXY: 'off', GOTOOLCHAIN: 'local', CGO_ENABLED: '0', ...extra };
}
