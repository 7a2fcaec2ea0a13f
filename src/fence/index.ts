// palisade-server/fence (and palisade-client/fence): what a protected resource embeds to
// refuse holders of stale locks.
// It needs no cluster and imports nothing else of the project.
export { StaleTokenError, FenceInputError, FenceUnavailableError } from './errors.js';
export { toToken, checkResource, MAX_TOKEN, MAX_RESOURCE_BYTES, type TokenInput } from './input.js';
export type { FenceStore, RaiseResult } from './store.js';
export { MemoryFenceStore } from './memory-store.js';
export { FenceGuard } from './guard.js';
export { FencedRegister, type FencedValue } from './register.js';
