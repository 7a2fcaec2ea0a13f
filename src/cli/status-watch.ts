// `palisade status --watch`: redraw the status table in place every interval until Ctrl-C.
import { fetchStatus, formatStatus } from './status.js';
import { colour, toleranceOf } from './status-command.js';

/** Cursor home + clear screen: the table redraws in place instead of scrolling. */
const CLEAR = '\x1b[H\x1b[2J';

export async function watchStatus(endpoints: readonly string[], intervalMs = 500, out: NodeJS.WriteStream = process.stdout): Promise<never> {
  let leader: string | null | undefined; // undefined until the first round
  let changedAt = '';
  for (;;) {
    const started = Date.now();
    // A short timeout keeps a dead node from stalling the redraw past the interval.
    const rows = await fetchStatus(endpoints, Math.max(200, intervalMs - 100));
    const now = rows.find((r) => r.role === 'leader')?.id ?? null;
    if (now !== leader) {
      if (leader !== undefined) changedAt = `  (leader ${leader ?? '-'} -> ${now ?? '-'} at ${new Date().toISOString().slice(11, 23)})`;
      leader = now;
    }
    const ft = toleranceOf(rows);
    out.write(
      `${CLEAR}palisade status  ${new Date().toISOString().slice(11, 23)}  leader ${leader ?? 'none'}${changedAt}\n\n${formatStatus(rows)}\n\n${colour(ft.text, ft.danger, out.isTTY === true)}\n\nCtrl-C to stop\n`,
    );
    await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (Date.now() - started))));
  }
}
