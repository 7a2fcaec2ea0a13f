// The command line loads only what a command uses: `--help` and the client commands must not
// load the server (LevelDB, prom-client, pino, Raft, the lock machine), which costs start-up
// CPU on every invocation. A module-resolution hook in the child lists what was loaded.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { CLI } from '../support/cluster.js';

const HOOKS = `export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('LOADED ' + r.url + '\\n'); return r; }`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;

function loaded(args: string[]): string[] {
  const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`, CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return r.stderr.split('\n').filter((l) => l.startsWith('LOADED ')).map((l) => l.slice(7));
}

// The CLI reads the config file (src/config, outside the server) and, for its defaults, the
// lock machine's bounds (lockfsm/config.js: a small module without imports of its own).
const SERVER = /\/dist\/(server\/|storage\/|raft\/|lockfsm\/(?!config\.js))|\/node_modules\/(level|classic-level|prom-client|pino)\//;

for (const args of [['--help'], ['lock', '--help'], ['status', '--endpoints', 'ws://127.0.0.1:1', '--json'], ['kv', 'get', 'k', '--endpoints', 'ws://127.0.0.1:1']]) {
  test(`palisade ${args.join(' ')} loads no server code`, () => {
    const urls = loaded(args);
    assert.ok(urls.some((u) => u.endsWith('/dist/cli/main.js')), 'the hook saw the CLI load');
    assert.deepEqual(urls.filter((u) => SERVER.test(u)), []);
  });
}

test('palisade serve does load the server (the hook sees it)', () => {
  const urls = loaded(['serve', '--config', 'no-such-file.json', '--id', 'n1']);
  assert.ok(urls.some((u) => u.includes('/dist/server/node.js')));
});
