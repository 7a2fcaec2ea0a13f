// Which errors from pg mean "the database could not be reached or the session was lost",
// as opposed to an error in the SQL or the data, which callers must see unchanged.

// Socket errors while connecting or talking to the server.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
// Errors that are about a path only when connecting (a unix socket that is not there).
const CONNECT_PATH_CODES = new Set(['ENOENT', 'EACCES']);

// SQLSTATEs of a server that is going away, starting, full or ended the session.
const SERVER_GONE_STATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, in recovery)
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
  '53300', // too_many_connections
]);

// pg reports a lost connection or a pool timeout without any code.
const LOST_CONNECTION_MESSAGES =
  /connection terminated|not queryable|timeout exceeded when trying to connect|connection timeout|query read timeout/i;

interface ErrorFields {
  code?: unknown;
  syscall?: unknown;
  message?: unknown;
  errors?: unknown;
}

export function isConnectionFailure(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const e = err as ErrorFields;
  const code = typeof e.code === 'string' ? e.code : '';
  if (NETWORK_CODES.has(code)) return true;
  if (CONNECT_PATH_CODES.has(code) && e.syscall === 'connect') return true;
  if (code.startsWith('08') || SERVER_GONE_STATES.has(code)) return true;
  if (typeof e.message === 'string' && LOST_CONNECTION_MESSAGES.test(e.message)) return true;
  // Node tries each address of a host name and reports an AggregateError of them all.
  if (Array.isArray(e.errors)) return e.errors.some((inner) => isConnectionFailure(inner, depth + 1));
  return false;
}

export function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as ErrorFields).code;
    const text = err.message || (Array.isArray((err as ErrorFields).errors) ? 'several connection attempts failed' : err.name);
    return typeof code === 'string' ? `${code}: ${text}` : text;
  }
  return String(err);
}
