/**
 * Everything that goes wrong with a node's data directory: a start-up problem (wrong
 * cluster, wrong node, corrupt or truncated data, a directory another process holds) or a
 * write that did not become durable. The message names the directory and what is wrong, so
 * an operator can act on it; the node never recovers from one by resetting its data.
 */
export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly dir: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`storage ${dir}: ${problem}`, options);
  }
}
