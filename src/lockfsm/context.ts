// What every state change needs while one entry is applied: the entry's index (session id,
// fencing token and revision all come from it) and the list the events go to.

import type { MachineEvent } from './types.js';

export interface ApplyContext {
  readonly index: number;
  readonly events: MachineEvent[];
}
