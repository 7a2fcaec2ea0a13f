// `palisade snapshot save` and `palisade snapshot inspect`.
import { readBackupFile, writeFileAtomically } from '../backup/file.js';
import { backupKey } from '../backup/format.js';
import { summarize, type BackupSummary } from '../backup/summary.js';
import { loadConfig } from '../config/cluster-config.js';
import type { BackupChunk, ResultOf } from '../protocol/ops.js';
import { rpcCredentials } from './credentials.js';
import { printable, safeJson } from './terminal-text.js';

/** How long one chunk may take to arrive (the first includes the node writing the file). */
const CHUNK_TIMEOUT_MS = 60_000;

/** A `snapshot` with `backup` answers a chunk; a node that answered a compaction's index
 *  did not take the backup (an older node). */
function chunkOf(url: string, r: ResultOf<'snapshot'>): BackupChunk {
  if (!('backupId' in r)) throw new Error(`${url} answered the backup request with a compaction (index ${r.index}): it does not serve backups`);
  return r;
}

export async function saveCommand(file: string, endpoints: string[]): Promise<void> {
  const { RpcConnection, RpcError } = await import('../protocol/rpc.js');
  // Any node serves it: the read barrier makes a follower's state as current as the leader's.
  // The node writes the whole file (its header, and the MAC under the cluster secret, which
  // this side never holds); it is read here a chunk at a time over one connection and
  // written as it comes.
  let last: Error = new Error('no endpoints');
  for (const url of endpoints) {
    let conn;
    try {
      conn = await RpcConnection.open(url, 10_000, rpcCredentials());
    } catch (e) {
      last = e as Error;
      continue;
    }
    try {
      const c = conn;
      const first = chunkOf(url, await c.call({ op: 'snapshot', backup: true }, CHUNK_TIMEOUT_MS));
      async function* chunks(): AsyncGenerator<Uint8Array> {
        let written = 0;
        for (let chunk = first; ; ) {
          if (chunk.offset !== written || (chunk.data.length === 0 && written < first.bytes)) {
            throw new Error(`${url} answered the backup's bytes out of order (at ${chunk.offset}, expected ${written})`);
          }
          yield chunk.data;
          written += chunk.data.length;
          if (written >= first.bytes) return;
          chunk = chunkOf(url, await c.call({ op: 'snapshot', backup: true, backupId: first.backupId, offset: written }, CHUNK_TIMEOUT_MS));
        }
      }
      await writeFileAtomically(file, chunks());
      process.stdout.write(`saved ${file}: cluster ${first.clusterId}, index ${first.index} (term ${first.term}, read on ${first.node}), ${first.bytes} bytes\n`);
      return;
    } catch (e) {
      last = e as Error;
      if (e instanceof RpcError && !['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER'].includes(e.code)) throw e;
    } finally {
      conn.close();
    }
  }
  throw last;
}

/** The keys a backup may be checked with: those of every secret of `configs` (config files),
 *  so a file saved before a rotation still checks against the config that lists both. */
export function keysFrom(configs: readonly string[]): Uint8Array[] {
  return configs.flatMap((path) => loadConfig(path).secrets.map(backupKey));
}

export async function inspectCommand(file: string, o: { json?: boolean; limit: number; config?: string }): Promise<void> {
  // Without a config the file's structure is checked, not its MAC: said so in the output.
  const summary = summarize(await readBackupFile(file, o.config !== undefined ? keysFrom([o.config]) : null));
  process.stdout.write(o.json ? `${safeJson(summary)}\n` : `${formatSummary(summary, o.limit)}\n`);
}

export function formatSummary(s: BackupSummary, limit: number): string {
  const h = s.header;
  const held = s.locks.filter((l) => l.holders.length > 0).length;
  // Every string of the file is shown escaped: names and values were written by any client.
  const p = printable;
  const hmac = s.hmac === 'not checked' ? 'not checked (pass --config with the config of the cluster that wrote it)' : s.hmac;
  const lines = [
    `cluster      ${p(h.clusterId)}`,
    `index        ${h.index}   (term ${h.term}, read on ${p(h.node)})`,
    `taken at     ${p(h.createdAt)}`,
    `format       ${p(h.machineFormat)} v${h.machineVersion}, ${h.bodyBytes} bytes of state`,
    `HMAC         ${hmac}`,
    `sessions     ${s.sessions}`,
    `locks        ${s.locks.length} (${held} held)`,
    `elections    ${s.elections.length} (${s.elections.filter((e) => e.leader !== null).length} with a leader)`,
    `keys         ${s.keys.length}`,
    `highest token held ${s.highestToken}; no token of this state exceeds index ${h.index}`,
  ];
  const table = (title: string, rows: string[]) => {
    if (rows.length === 0) return;
    lines.push('', title);
    for (const r of rows.slice(0, limit)) lines.push(`  ${r}`);
    if (rows.length > limit) lines.push(`  ... ${rows.length - limit} more (--limit)`);
  };
  table('locks', s.locks.map((l) => `${p(l.name)}  ${l.holders.map((x) => `session ${x.session} token ${x.token} ${x.mode}`).join(', ') || 'free'}${l.waiters ? `  ${l.waiters} waiting` : ''}`));
  table('elections', s.elections.map((e) => `${p(e.name)}  ${e.leader === null ? 'no leader' : `leader session ${e.leader} token ${e.token} value ${p(JSON.stringify(e.value))}`}${e.candidates ? `  ${e.candidates} candidates` : ''}`));
  table('keys', s.keys.map((k) => `${p(k.key)}  revision ${k.revision}  ${k.bytes} bytes`));
  return lines.join('\n');
}
