// Constructors of the typed error results. apply never throws for a bad command: it answers
// one of these, and the entry still counts as applied.

import type { MachineError, MachineErrorCode } from './types.js';

export function machineError(code: MachineErrorCode, message: string): MachineError {
  return { type: 'error', code, message };
}

export const invalidArgument = (message: string): MachineError => machineError('INVALID_ARGUMENT', message);
export const limitExceeded = (message: string): MachineError => machineError('LIMIT_EXCEEDED', message);
export const conflict = (message: string): MachineError => machineError('CONFLICT', message);

export function unknownSession(session: number): MachineError {
  return machineError('UNKNOWN_SESSION', `session ${session} is not open (never opened, closed or expired)`);
}

/** FENCED / NOT_HOLDER / lock CONFLICT carry the lock's current token so the caller sees why. */
export function withToken(
  code: MachineErrorCode,
  message: string,
  currentToken: number | null,
): MachineError {
  return { type: 'error', code, message, currentToken };
}

export function isMachineError(value: { readonly type: string }): value is MachineError {
  return value.type === 'error';
}
