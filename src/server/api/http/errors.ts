// HTTP statuses for the client protocol's stable error codes, and the JSON shape of an
// error answer. The codes are the websocket protocol's (docs/protocol.md §9); the status only
// tells generic HTTP clients and proxies what kind of failure it is.
import type { ErrorCode } from '../../../protocol/client-protocol.js';

const STATUS: Readonly<Record<ErrorCode, number>> = {
  BAD_FRAME: 400,
  UNKNOWN_OP: 404,
  INVALID_ARGUMENT: 400,
  FRAME_TOO_LARGE: 413,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  UNKNOWN_SESSION: 404,
  NOT_HOLDER: 409,
  FENCED: 409,
  CONFLICT: 409,
  STALE_SEQUENCE: 409,
  LIMIT_EXCEEDED: 429,
  RATE_LIMITED: 429,
  NOT_LEADER: 503,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
  // The revision a watch asked to resume from is gone from the history: start again.
  COMPACTED: 410,
  INTERNAL: 500,
};

export function statusFor(code: ErrorCode): number {
  return STATUS[code] ?? 500;
}

/** Thrown while reading or mapping an HTTP request: answered as `{error}` with `status`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}
