// The answer to `watch`, read from the node's applied state right after its linearizable
// read (so it covers every change committed before the request arrived):
// - plain: the prefix's entries (the op as it was first; older clients read an array);
// - `snapshot`: the entries and the revision they reflect (the applied index), from which
//   the client counts the changes pushed after;
// - `fromRevision`: every change after that revision from the replicated watch history
//   (lockfsm/history.ts), a page at a time, or COMPACTED naming the oldest revision a watch
//   may resume from. A revision ahead of this cluster's applied state (after the read, it
//   would be ahead of every commit) is no revision of this cluster: refused.
import type { LockMachine } from '../../lockfsm/index.js';
import type { Request } from '../../protocol/client-protocol.js';
import { answer, type Answer } from '../../protocol/ops.js';
import { fail } from './wire.js';

/** Entries a watch answers with at most. */
export const WATCH_PAGE = 1000;
/** Changes and bytes of keys and values a replay answers with at most (more: `more`). The
 *  bytes stay well under a client's unread-bytes bound (16 MiB by default). */
export const REPLAY_PAGE = 1000;
export const REPLAY_PAGE_BYTES = 1 << 20;
/** Changes of the history one replay looks at, at most: a resume of a prefix that few keys
 *  match must not cost a pass over the whole history (100,000 changes) per request. */
export const REPLAY_SCAN = 10_000;

export function watchAnswer(machine: LockMachine, req: Extract<Request, { op: 'watch' }>): Answer<'watch'> {
  const revision = machine.appliedIndex;
  if (req.fromRevision !== undefined) {
    if (req.fromRevision > revision) {
      return fail('INVALID_ARGUMENT', `watch.fromRevision ${req.fromRevision} is ahead of this cluster's latest revision (${revision}): a revision of another cluster?`);
    }
    const h = machine.kvHistory(req.fromRevision, req.prefix, REPLAY_PAGE, REPLAY_PAGE_BYTES, REPLAY_SCAN);
    if (h.type === 'compacted') {
      return fail(
        'COMPACTED',
        `the watch history no longer holds every change after revision ${req.fromRevision}: resume from ${h.compactedThrough} or later, or start again from a snapshot (watch.historyEntries, watch.historyBytes and watch.historyMaxAgeMs bound what is kept)`,
        { compactRevision: h.compactedThrough },
      );
    }
    return answer('watch', { revision: h.more ? h.through! : revision, changes: h.changes, more: h.more });
  }
  const entries = machine.kvRange(req.prefix, WATCH_PAGE + 1).map((kv) => ({ key: kv.key, value: kv.value, revision: kv.revision }));
  if (req.snapshot) return answer('watch', { revision, entries: entries.slice(0, WATCH_PAGE), truncated: entries.length > WATCH_PAGE });
  return answer('watch', entries.slice(0, WATCH_PAGE));
}
