// The words the lock machine and the client protocol share: the same concept, the same shape,
// defined once here. Declarations only (no code), so that src/protocol can import them with
// `import type` and stay runnable without the machine.
//
// Why here and not in src/protocol: src/lockfsm imports nothing outside itself (it is the
// pure core every node replays identically), so a definition both use must live inside it;
// the protocol speaks the core's words, never the other way round. The cost: the client
// package (tsconfig.client.json) ships this one file's declarations (an empty .js), and
// test/ops/client-package.test.ts allows exactly this file of src/lockfsm. Where the wire form
// differs from the machine's (results tagged by `status` and carrying the entry index, the
// lock view without positions and delay, tokens as decimal strings over HTTP), each side
// keeps its own type under its own name (the machine's are Machine*, see types.ts).

export type LockMode = 'exclusive' | 'shared';

/** Proof of holding a lock: the lock's name and the fencing token of the caller's grant. */
export interface Fence {
  readonly lock: string;
  readonly token: number;
}

/** One holder of a lock: its session, the token of its grant and the mode it holds. */
export interface Holder {
  readonly session: number;
  readonly token: number;
  readonly mode: LockMode;
}

/** A key of the fenced key-value space; `revision` is the index of the entry that wrote it. */
export interface KvEntry {
  readonly key: string;
  readonly value: Uint8Array;
  readonly revision: number;
}

/** A condition of a transaction, judged against the state before its entry. */
export type TxnCompare =
  /** The key's revision (0 when absent) compared with `revision`. */
  | { readonly target: 'revision'; readonly key: string; readonly op: 'eq' | 'ne' | 'gt' | 'lt'; readonly revision: number }
  /** The key does not exist (the same as revision eq 0, said plainly). */
  | { readonly target: 'absent'; readonly key: string }
  /** The transaction's session holds `lock` right now with exactly `token`: a fence. */
  | { readonly target: 'lock'; readonly lock: string; readonly token: number };

/** A write of a transaction; each key at most once per branch. */
export type TxnOp =
  | { readonly op: 'put'; readonly key: string; readonly value: Uint8Array; readonly ephemeral?: boolean }
  | { readonly op: 'delete'; readonly key: string };
