// What one figure's run ended with: its own module, so that the report, the figures read
// from it and the ABBA comparison all name it without importing one another.
import type { WorkloadResult } from './messages.js';
import type { WorkloadName } from './options.js';

export interface CaseOutcome {
  readonly workload: WorkloadName;
  readonly label: string;
  readonly seconds: number;
  readonly result: WorkloadResult | null;
  readonly error: string | null;
  /** Raft terms when the workload started and ended (highest of the nodes): more than one
   *  term means leadership moved, which no workload but failover asks for. */
  readonly terms: { readonly start: number; readonly end: number } | null;
}
