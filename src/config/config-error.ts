// A config problem: the JSON path of the field it is about, and what is wrong with it.
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`config: ${field}: ${message}`);
    this.name = 'ConfigError';
  }
}
