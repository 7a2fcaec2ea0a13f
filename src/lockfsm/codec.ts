// The bytes of a command in the Raft log, and the msgpackr settings shared with snapshots.
// Plain msgpack maps (no msgpackr records) so that every node, and any later version,
// reads the same bytes the same way without shared structure state.

import { Packr, Unpackr } from 'msgpackr';
import { DEFAULT_MACHINE_CONFIG, type MachineConfig } from './config.js';
import { invalidArgument } from './errors.js';
import type { Command, MachineError } from './types.js';
import { validateCommand } from './validate.js';

export const packr = new Packr({ useRecords: false, variableMapSize: true, moreTypes: false });
/** For entries: validation copies every byte array it keeps, so views are fine here. */
export const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
/** For snapshots: byte arrays inside stored answers must not pin the whole snapshot buffer. */
export const copyingUnpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  copyBuffers: true,
});

/**
 * A plain Uint8Array view of `data`: decoded byte arrays then come out as plain
 * Uint8Arrays whatever subclass (e.g. a Node Buffer from storage) the caller passed.
 */
export function plainView(data: Uint8Array): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Encoded bytes as a plain Uint8Array of exact size (not a view into msgpackr's buffer). */
export function packToBytes(value: unknown): Uint8Array {
  return new Uint8Array(packr.pack(value));
}

/**
 * Encodes a command for proposing. Throws an Error with the validation message when the
 * command is not well-formed within `config` (check with validateCommand first to answer
 * a client without throwing).
 */
export function encodeCommand(cmd: Command, config: MachineConfig = DEFAULT_MACHINE_CONFIG): Uint8Array {
  const checked = validateCommand(cmd, config);
  if (checked.type === 'error') throw new Error(`lockfsm: cannot encode command: ${checked.message}`);
  return packToBytes(checked);
}

/** Decodes and fully validates an entry's bytes. Never throws: bad bytes give an error. */
export function decodeCommand(
  data: Uint8Array,
  config: MachineConfig = DEFAULT_MACHINE_CONFIG,
): Command | MachineError {
  if (!(data instanceof Uint8Array)) return invalidArgument('command data must be bytes');
  if (data.length === 0) return invalidArgument('empty command data');
  let value: unknown;
  try {
    value = unpackr.unpack(plainView(data));
  } catch (err) {
    const reason = err instanceof Error ? err.message.slice(0, 120) : 'undecodable';
    return invalidArgument(`command data is not valid msgpack: ${reason}`);
  }
  return validateCommand(value, config);
}
