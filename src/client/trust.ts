// What the SDK reports when a node gives it reason not to trust it (docs/security.md, "What
// clients trust"). Every report is also acted on where it arises: the node is set aside
// (link.ts), and a refused grant is an error for the caller (TokenRegressionError). The
// report is for the operator: a node answering for another cluster, a learned member that
// cannot prove it belongs, or a grant below the client's token floor means a misconfigured
// member, a planted one, or a node that lost its data.

export type TrustViolationKind =
  /** A node answered hello with another clusterId than the one this client pinned. */
  | 'CLUSTER_MISMATCH'
  /** A learned member did not prove it holds this client's token before being given it. */
  | 'UNPROVEN_NODE'
  /** A node granted a lock or leadership with a token at or below the client's floor. */
  | 'TOKEN_REGRESSION'
  /** A member list or hint named a URL dialled with less protection than the seeds. */
  | 'INSECURE_ENDPOINT';

export interface TrustViolation {
  readonly kind: TrustViolationKind;
  /** The node's client URL. */
  readonly url: string;
  readonly message: string;
}

/** Without an onTrustViolation option: a process warning, which Node prints to stderr
 *  once per message and applications can observe with process.on('warning'). */
export function warnProcess(violation: TrustViolation): void {
  process.emitWarning(violation.message, { type: 'PalisadeTrustWarning', code: `PALISADE_${violation.kind}` });
}
