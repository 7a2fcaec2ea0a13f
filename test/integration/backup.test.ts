// `palisade snapshot save / inspect` against a real cluster under load (the built CLI), and
// the backup file's own checks: a truncated, corrupted or foreign file is refused by name.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BACKUP_FORMAT_VERSION, BackupFormatError, decodeBackup, encodeBackup } from '../../src/backup/format.js';
import type { BackupSummary } from '../../src/backup/summary.js';
import { LockClient } from '../../src/client/index.js';
import { permissionProblem } from '../../src/server/auth.js';
import { CLI, TestCluster } from './cluster-harness.js';

const run = promisify(execFile);

describe('the backup file', () => {
  const header = { clusterId: 'c', index: 42, term: 3, createdAt: '2026-01-01T00:00:00.000Z', node: 'n1', machineFormat: 'palisade.lockfsm', machineVersion: 1 };
  const body = new Uint8Array(Array.from({ length: 300 }, (_, i) => i % 251));
  const file = encodeBackup(header, body);

  test('reads back what was written', () => {
    const b = decodeBackup(file);
    assert.deepEqual(b.header, { ...header, bodyBytes: body.length });
    assert.deepEqual(b.body, body);
  });

  test('refuses a truncated file at every length', () => {
    for (let len = 0; len < file.length; len += 7) {
      assert.throws(() => decodeBackup(file.subarray(0, len)), BackupFormatError, `cut at ${len}`);
    }
    assert.throws(() => decodeBackup(file.subarray(0, file.length - 1)), /truncated/);
  });

  test('refuses a flipped byte anywhere, and names the checksum for the body', () => {
    for (let i = 0; i < file.length; i += 5) {
      const bad = Buffer.from(file);
      bad[i]! ^= 0x01;
      assert.throws(() => decodeBackup(bad), BackupFormatError, `flip at ${i}`);
    }
    const bad = Buffer.from(file);
    bad[file.length - 100]! ^= 0xff;
    assert.throws(() => decodeBackup(bad), /checksum/);
  });

  test('refuses a foreign file and a newer format, naming both versions', () => {
    assert.throws(() => decodeBackup(Buffer.from('{"hello":1}')), /not a Palisade backup/);
    const newer = Buffer.from(file);
    newer.writeUInt32BE(BACKUP_FORMAT_VERSION + 1, 16);
    assert.throws(() => decodeBackup(newer), new RegExp(`version ${BACKUP_FORMAT_VERSION + 1}; this build reads version ${BACKUP_FORMAT_VERSION}`));
  });
});

test('a backup reads every lock and key: only admin tokens may take one', () => {
  const everything = { name: 'ops', prefixes: null, readOnly: false, admin: false };
  assert.equal(permissionProblem(everything, { id: 1, op: 'snapshot', backup: true })?.code, 'PERMISSION_DENIED');
  assert.equal(permissionProblem({ ...everything, admin: true }, { id: 1, op: 'snapshot', backup: true }), null);
});

describe('palisade snapshot save / inspect on a live cluster', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started();
  });
  after(() => c.stop());

  test('a save under load holds every write acknowledged before it, and inspect shows it', async () => {
    const client = await LockClient.connect({ endpoints: c.endpoints, ttlMs: 30_000 });
    const loader = await LockClient.connect({ endpoints: c.endpoints, ttlMs: 30_000 });
    try {
      const held = await client.acquire('held/a');
      const leadership = await client.election('primary').campaign('host-a');
      for (let i = 0; i < 10; i++) await client.put(`key/${i}`, `value ${i}`);

      // Load: lock cycles and puts, until the save has finished.
      let stop = false;
      let ackedBeforeSave = 0;
      let savingStarted = false;
      const load = (async () => {
        for (let i = 0; !stop; i++) {
          const l = await loader.acquire(`load/${i % 5}`);
          await l.release();
          const r = await loader.put('load/counter', String(i));
          if (!savingStarted) ackedBeforeSave = r.revision;
        }
      })();
      await new Promise((r) => setTimeout(r, 300));
      savingStarted = true;
      const floor = ackedBeforeSave;
      const file = join(c.dir, 'backup.palisade');
      const saved = await run(process.execPath, [CLI, 'snapshot', 'save', file, '--endpoints', c.endpoints.join(',')]);
      stop = true;
      await load;
      assert.match(saved.stdout, /^saved .*: cluster palisade-test, index \d+/);

      const out = await run(process.execPath, [CLI, 'snapshot', 'inspect', file, '--json']);
      const s = JSON.parse(out.stdout) as BackupSummary;
      assert.equal(s.header.clusterId, 'palisade-test');
      assert.ok(floor > 0 && s.header.index >= floor, `backup index ${s.header.index} covers the write acknowledged at ${floor}`);
      const counter = s.keys.find((k) => k.key === 'load/counter');
      assert.ok(counter && counter.revision >= floor, 'the last put acknowledged before the save is in it');
      for (let i = 0; i < 10; i++) assert.ok(s.keys.some((k) => k.key === `key/${i}`), `key/${i}`);
      const lock = s.locks.find((l) => l.name === 'held/a');
      assert.deepEqual(lock?.holders.map((h) => h.token), [held.token]);
      const e = s.elections.find((x) => x.name === 'primary');
      assert.equal(e?.token, leadership.token);
      assert.equal(e?.value, 'host-a');
      assert.equal(s.sessions, 2);
      assert.equal(s.highestToken, Math.max(held.token, leadership.token));

      const text = await run(process.execPath, [CLI, 'snapshot', 'inspect', file]);
      assert.match(text.stdout, /cluster\s+palisade-test/);
      assert.match(text.stdout, new RegExp(`held/a  session \\d+ token ${held.token} exclusive`));

      // A damaged copy is refused with a clear message and a failing exit status.
      const cut = join(c.dir, 'cut.palisade');
      writeFileSync(cut, readFileSync(file).subarray(0, 100));
      await assert.rejects(run(process.execPath, [CLI, 'snapshot', 'inspect', cut]), (e: { code: number; stderr: string }) => {
        assert.equal(e.code, 1);
        assert.match(e.stderr, /cut\.palisade: truncated/);
        return true;
      });
    } finally {
      await client.close();
      await loader.close();
    }
  });
});
