// A binary min-heap of timed events, ordered by (time, seq): seq breaks ties in insertion
// order so that a run never depends on anything but the seed.
export interface Timed {
  readonly time: number;
  readonly seq: number;
}

export class EventHeap<T extends Timed> {
  private readonly a: T[] = [];

  get size(): number {
    return this.a.length;
  }

  push(x: T): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  peek(): T | undefined {
    return this.a[0];
  }

  pop(): T | undefined {
    const a = this.a;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l]!, a[m]!)) m = l;
        if (r < a.length && before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(x: Timed, y: Timed): boolean {
  return x.time < y.time || (x.time === y.time && x.seq < y.seq);
}
