// Combining abort signals without AbortSignal.any: on Node 20 a signal made by any() stays
// referenced by each long-lived source (here, the session's signal) and leaks, one per call.
// This links by plain listeners and removes them when the caller is done.

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Detaches from the sources; call when the operation ends. */
  dispose(): void;
}

/** A signal aborted (with the source's reason) as soon as any of `sources` is. */
export function anySignal(sources: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const aborted = sources.find((s) => s.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose: () => {} };
  }
  const listeners = sources.map((source) => {
    const onAbort = (): void => controller.abort(source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    return () => source.removeEventListener('abort', onAbort);
  });
  return { signal: controller.signal, dispose: () => listeners.forEach((remove) => remove()) };
}
