// Timed events, earliest first, ordered by (time, seq): seq breaks ties in insertion order so
// that a run never depends on anything but the seed.
import { MinHeap } from '../../src/server/leases/min-heap.js';

export interface Timed {
  readonly time: number;
  readonly seq: number;
}

export class EventHeap<T extends Timed> extends MinHeap<T> {
  constructor() {
    super(byTimeThenSeq);
  }
}

function byTimeThenSeq(x: Timed, y: Timed): number {
  if (x.time !== y.time) return x.time < y.time ? -1 : 1;
  return x.seq - y.seq;
}
