// Writing an answer: a JSON body, or an error in the shape every HTTP API error has.
import type { ServerResponse } from 'node:http';
import type { WireError } from '../../../protocol/client-protocol.js';
import { statusFor } from './errors.js';
import { toJsonTokens } from './json-wire.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: WireError, status = statusFor(error.code), headers: Readonly<Record<string, string>> = {}): void {
  sendJson(res, status, { error: toJsonTokens(error) }, headers);
}
