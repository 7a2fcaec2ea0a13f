// A push-to-pull bridge: the SDK pushes events in as they arrive, the application pulls
// them with `for await`. Unbounded, since events are small and the application decides
// how fast it reads; leaving the loop (break, return, throw) runs `onClose`.

export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private readonly takers: { resolve(r: IteratorResult<T>): void; reject(e: unknown): void }[] = [];
  private ended = false;
  private failure: { error: unknown } | null = null;
  private readonly onClose: () => void;

  constructor(onClose: () => void = () => {}) {
    this.onClose = onClose;
  }

  get closed(): boolean {
    return this.ended;
  }

  push(item: T): void {
    if (this.ended) return;
    const taker = this.takers.shift();
    if (taker) taker.resolve({ value: item, done: false });
    else this.items.push(item);
  }

  /** Ends the stream: readers get the buffered items, then `done` (or `error`, when given). */
  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) this.failure = { error };
    for (const taker of this.takers.splice(0)) {
      if (this.failure) taker.reject(this.failure.error);
      else taker.resolve({ value: undefined, done: true });
    }
    this.onClose();
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.ended) {
      if (this.failure) {
        const { error } = this.failure;
        this.failure = null; // report it once, then plain done
        return Promise.reject(error);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => this.takers.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.items.length = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
