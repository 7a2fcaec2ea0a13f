// Tokens of a cluster with tenants: two tokens scoped to disjoint prefixes and an admin
// token, as the session tests use them, and the config section that declares them.
export const SCOPED_TOKENS = {
  jobs: 'jobs-scoped-token-0123456789',
  batch: 'batch-scoped-token-0123456789',
  ops: 'admin-token-for-ops-0123456789',
} as const;

/** The config sections (`extraConfig`, `config`) of a cluster whose clients present SCOPED_TOKENS. */
export function scopedAuthConfig(): Record<string, unknown> {
  return {
    auth: {
      tokens: [
        { name: 'jobs', token: SCOPED_TOKENS.jobs, prefixes: ['jobs/'] },
        { name: 'batch', token: SCOPED_TOKENS.batch, prefixes: ['batch/'] },
        { name: 'ops', token: SCOPED_TOKENS.ops, admin: true },
      ],
    },
  };
}
