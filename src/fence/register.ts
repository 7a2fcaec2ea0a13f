import { StaleTokenError } from './errors.js';
import { checkResource, toToken, type TokenInput } from './input.js';

/** A value and the token that wrote it. */
export interface FencedValue<T> {
  value: T;
  /** The highest token accepted so far, or null before the first write. */
  fence: bigint | null;
}

/**
 * One value in memory that only accepts writes carrying a token not lower than the last
 * accepted one. The check and the write are one synchronous step, so this is the smallest
 * honest model of a fenced resource: for tests, demos and in-process state.
 */
export class FencedRegister<T> {
  readonly resource: string;
  #value: T;
  #fence: bigint | null = null;

  constructor(initial: T, resource = 'register') {
    this.resource = checkResource(resource);
    this.#value = initial;
  }

  /** Stores `value` if `token` is not lower than the fence; throws StaleTokenError otherwise. */
  write(token: TokenInput, value: T): void {
    const t = toToken(token);
    if (this.#fence !== null && t < this.#fence) throw new StaleTokenError(this.resource, t, this.#fence);
    this.#fence = t;
    this.#value = value;
  }

  read(): FencedValue<T> {
    return { value: this.#value, fence: this.#fence };
  }

  get value(): T {
    return this.#value;
  }

  get fence(): bigint | null {
    return this.#fence;
  }
}
