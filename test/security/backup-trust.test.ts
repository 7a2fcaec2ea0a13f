// A backup file a restore can trust (the built CLI against a real node). The file's createdAt
// sets the default token floor: edited to an older time, with its checksum recomputed as
// anyone who can write the file can, it was accepted; in the future, the time since it was
// taken silently became 0. Now the file carries an HMAC under a key derived from the cluster
// secret, and restore refuses both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CLI, ROOT, TestCluster } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';

const run = promisify(execFile);
const SECRET = 'backup-trust-secret-0123456789';

/** The header of a backup file and where it lies (magic 16 bytes, version, header length). */
function headerOf(file: Buffer): { version: number; start: number; end: number; header: Record<string, unknown> } {
  const version = file.readUInt32BE(16);
  const length = file.readUInt32BE(20);
  return { version, start: 24, end: 24 + length, header: JSON.parse(file.subarray(24, 24 + length).toString('utf8')) as Record<string, unknown> };
}

/** `file` with createdAt set to `at` (the same length), and its last 32 bytes made again by
 *  `seal` over the rest. */
function withCreatedAt(file: Buffer, at: string, seal: (content: Buffer, version: number) => Buffer): Buffer {
  const h = headerOf(file);
  const old = String(h.header.createdAt);
  assert.equal(at.length, old.length);
  const text = file.subarray(h.start, h.end).toString('utf8').replace(old, at);
  const content = Buffer.concat([file.subarray(0, h.start), Buffer.from(text, 'utf8'), file.subarray(h.end, file.length - 32)]);
  return Buffer.concat([content, seal(content, h.version)]);
}

/** What anyone who can write the file can compute. */
const sha256 = (content: Buffer): Buffer => createHash('sha256').update(content).digest();
/** What only a holder of the secret can (the documented derivation). */
const hmac = (content: Buffer): Buffer => createHmac('sha256', Buffer.from(hkdfSync('sha256', SECRET, 'palisade backup', 'backup file HMAC-SHA256, format 2', 32))).update(content).digest();

describe('restoring a backup checks who wrote it and when', { timeout: 120_000 }, () => {
  let c: TestCluster;
  let fresh: TestCluster;
  let saved: Buffer;

  before(async () => {
    c = await TestCluster.started({ nodes: 1, secret: SECRET });
    fresh = await TestCluster.create({ nodes: 1, secret: SECRET, extraConfig: { clusterId: 'palisade-restored' } });
    const w = await RawClient.connect(c.endpoints[0]!);
    const session = (await w.ok({ op: 'openSession', ttlMs: 60_000 })).session as number;
    await w.ok({ op: 'acquire', session, seq: 1, name: 'held', mode: 'exclusive', wait: false });
    w.close();
    const file = join(c.dir, 'saved.palisade');
    await run(process.execPath, [CLI, 'snapshot', 'save', file, '--endpoints', c.endpoints[0]!]);
    saved = readFileSync(file);
  });

  after(async () => {
    await c?.stop();
    await fresh?.stop();
  });

  async function restore(bytes: Buffer, ...args: string[]): Promise<{ ok: boolean; out: string }> {
    const file = join(c.dir, `try-${Math.random().toString(36).slice(2)}.palisade`);
    writeFileSync(file, bytes);
    try {
      const r = await run(process.execPath, [CLI, 'snapshot', 'restore', file, '--config', fresh.configPath, ...args]);
      return { ok: true, out: r.stdout };
    } catch (e) {
      return { ok: false, out: (e as { stderr: string }).stderr };
    }
  }

  test('a file whose createdAt was moved back, its checksum recomputed, is refused', async () => {
    const edited = withCreatedAt(saved, '2000-01-01T00:00:00.000Z', sha256);
    const r = await restore(edited);
    assert.equal(r.ok, false, `restored an edited file: ${r.out}`);
    assert.match(r.out, /HMAC does not match/);
  });

  test('a createdAt in the future is refused (it would make the elapsed time, and the floor, too small)', async () => {
    const ahead = new Date(Date.now() + 86_400_000).toISOString();
    const future = withCreatedAt(saved, ahead, (content, version) => (version === 1 ? sha256(content) : hmac(content)));
    const r = await restore(future);
    assert.equal(r.ok, false, `restored a file from the future: ${r.out}`);
    assert.match(r.out, /after this machine's clock says it is now/);
    assert.match(r.out, /--min-token/);
  });

  test('a file of the unkeyed format 1 is restored only with --trust-unkeyed', async () => {
    const v1 = readFileSync(join(ROOT, 'test/fixtures/v1/backup.palisade'));
    assert.equal(headerOf(v1).version, 1);
    const refused = await restore(v1, '--min-token', '100');
    assert.equal(refused.ok, false, refused.out);
    assert.match(refused.out, /unkeyed/);
    const trusted = await restore(v1, '--min-token', '100', '--trust-unkeyed');
    assert.equal(trusted.ok, true, trusted.out);
    assert.match(trusted.out, /token floor 100/);
  });
});
