// `palisade snapshot save` and `palisade snapshot inspect`.
import { encodeBackup } from '../backup/format.js';
import { readBackupFile, writeFileAtomically } from '../backup/file.js';
import { formatSummary, summarize } from '../backup/summary.js';
import type { BackupState } from '../protocol/ops.js';
import { ask } from './admin-commands.js';

export async function saveCommand(file: string, endpoints: string[]): Promise<void> {
  // Any node serves it: the read barrier makes a follower's state as current as the leader's.
  const s = await ask<BackupState>(endpoints, { op: 'snapshot', backup: true }, 60_000);
  const bytes = encodeBackup(
    {
      clusterId: s.clusterId,
      index: s.index,
      term: s.term,
      createdAt: new Date().toISOString(),
      node: s.node,
      machineFormat: s.machineFormat,
      machineVersion: s.machineVersion,
    },
    s.data,
  );
  await writeFileAtomically(file, bytes);
  process.stdout.write(`saved ${file}: cluster ${s.clusterId}, index ${s.index} (term ${s.term}, read on ${s.node}), ${bytes.length} bytes\n`);
}

export async function inspectCommand(file: string, o: { json?: boolean; limit: number }): Promise<void> {
  const summary = summarize(await readBackupFile(file));
  process.stdout.write(o.json ? `${JSON.stringify(summary, null, 2)}\n` : `${formatSummary(summary, o.limit)}\n`);
}
