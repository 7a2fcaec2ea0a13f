// config.schema.json (at the top of the package) is the one description of the config file:
// editors complete and check a config against it through its "$schema" key, docs/configuration.md's
// reference table is generated from it (scripts/config-reference.mjs), and this module checks
// every file against it before cluster-config.ts reads a value. It implements the part of JSON
// Schema the file uses (type, properties, additionalProperties: false, required, items,
// minItems, minLength, maxLength, minimum, maximum, pattern, enum, local $ref), so a key the
// schema does not name is refused at every level, with its path and the key it resembles:
// a typo in a setting must stop start-up, not silently leave the setting at its default
// (a misspelt "auth" turned authentication off; a misspelt "prefixes" gave a token every name).
import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error.js';

export interface SchemaNode {
  readonly type?: 'string' | 'integer' | 'boolean' | 'object' | 'array';
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly additionalProperties?: boolean;
  readonly required?: readonly string[];
  readonly items?: SchemaNode;
  readonly minItems?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly pattern?: string;
  readonly enum?: readonly string[];
  readonly $ref?: string;
  readonly $defs?: Readonly<Record<string, SchemaNode>>;
  readonly description?: string;
  readonly default?: unknown;
  readonly examples?: readonly unknown[];
  /** Annotations of this schema (JSON Schema ignores unknown keywords): the default in words
   *  where it depends on other settings, a hint added to any refusal of the value, and
   *  messages replacing the generic one of a keyword. */
  readonly 'x-default'?: string;
  readonly 'x-hint'?: string;
  readonly 'x-messages'?: Readonly<Record<string, string>>;
}

/** The package's config.schema.json: two folders up from src/config and from dist/config. */
export const SCHEMA_URL = new URL('../../config.schema.json', import.meta.url);

export const CONFIG_SCHEMA: SchemaNode = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as SchemaNode;

const own = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** A node with its local $ref followed; keywords beside the $ref (a description) win. */
export function resolveRef(node: SchemaNode, root: SchemaNode = CONFIG_SCHEMA): SchemaNode {
  if (node.$ref === undefined) return node;
  const m = /^#\/\$defs\/([^/]+)$/.exec(node.$ref);
  const target = m && root.$defs && own(root.$defs, m[1]!) ? root.$defs[m[1]!] : undefined;
  if (!target) throw new Error(`config.schema.json: unresolvable $ref ${node.$ref}`);
  const { $ref: _ref, ...rest } = node;
  return { ...resolveRef(target, root), ...rest };
}

/** A key as it appears in a path: `a.b`, or `a["odd key"]` when it is not a plain name. */
export function childPath(parent: string, key: string): string {
  const plain = /^[A-Za-z_$][\w$]*$/.test(key);
  if (parent === '') return plain ? key : `[${JSON.stringify(key)}]`;
  return plain ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}

/** Every key the schema names, as paths with `[]` for array items ("nodes[].id",
 *  "auth.tokens[].prefixes"), in schema order, containers before what they hold. */
export function schemaKeyPaths(root: SchemaNode = CONFIG_SCHEMA): string[] {
  const out: string[] = [];
  const walk = (node: SchemaNode, path: string): void => {
    const n = resolveRef(node, root);
    if (n.items) walk(n.items, `${path}[]`);
    for (const [key, child] of Object.entries(n.properties ?? {})) {
      const p = path === '' ? key : `${path}.${key}`;
      out.push(p);
      walk(child, p);
    }
  };
  walk(root, '');
  return out;
}

/** The schema of a key path as schemaKeyPaths names it. */
export function schemaAt(path: string, root: SchemaNode = CONFIG_SCHEMA): SchemaNode {
  let node = resolveRef(root, root);
  for (const part of path.split('.')) {
    const [key, ...arrays] = part.split('[]');
    const next = node.properties && own(node.properties, key!) ? node.properties[key!] : undefined;
    if (!next) throw new Error(`config.schema.json has no key ${path}`);
    node = resolveRef(next, root);
    for (let i = 0; i < arrays.length; i++) node = resolveRef(node.items!, root);
  }
  return node;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The known key `key` is most likely a misspelling of: the same but for case, else the
 *  closest within a third of its length (at least one edit). */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const sameButCase = known.find((k) => k.toLowerCase() === lower);
  if (sameButCase) return sameButCase;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const distance = editDistance(lower, k.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [k, distance];
  }
  return bestDistance <= Math.max(1, Math.floor(key.length / 3)) ? best : undefined;
}

/** Where else in the schema a key of this name (any case) belongs: "heartbeatMs" put at the top
 *  level belongs in "raft". */
function belongsElsewhere(key: string, root: SchemaNode): string | undefined {
  const lower = key.toLowerCase();
  const found = schemaKeyPaths(root).find((p) => p.split('.').at(-1)!.toLowerCase() === lower);
  return found;
}

function unknownKeyMessage(key: string, known: readonly string[], root: SchemaNode): string {
  const near = closestKey(key, known);
  if (near !== undefined) return `unknown key; did you mean "${near}"?`;
  const elsewhere = belongsElsewhere(key, root);
  if (elsewhere !== undefined) return `unknown key here; "${elsewhere.split('.').at(-1)}" belongs in ${elsewhere.replace(/\.[^.]+$/, '') || 'the top level'} (${elsewhere})`;
  return `unknown key (known here: ${known.join(', ')})`;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Checks `value` against `node`; throws a ConfigError naming the first problem's path. */
export function checkValue(value: unknown, node: SchemaNode, path: string, root: SchemaNode = CONFIG_SCHEMA): void {
  const n = resolveRef(node, root);
  const field = path === '' ? '(root)' : path;
  const fail = (keyword: string, message: string): never => {
    const text = n['x-messages']?.[keyword] ?? message;
    throw new ConfigError(field, n['x-hint'] ? `${text} (${n['x-hint']})` : text);
  };
  if (n.enum) {
    if (typeof value !== 'string' || !n.enum.includes(value)) fail('enum', `must be one of ${n.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    return;
  }
  switch (n.type) {
    case 'string': {
      const nonEmpty = n.minLength === 1 && n.maxLength === undefined;
      if (typeof value !== 'string') return fail('type', nonEmpty ? 'must be a non-empty string' : 'must be a string');
      const length = [...value].length;
      if ((n.minLength !== undefined && length < n.minLength) || (n.maxLength !== undefined && length > n.maxLength)) {
        if (nonEmpty) fail('minLength', 'must be a non-empty string');
        if (n.minLength !== undefined && n.maxLength !== undefined) fail('minLength', `must be ${n.minLength} to ${n.maxLength} characters`);
        if (n.minLength !== undefined) fail('minLength', `must be at least ${n.minLength} characters`);
        fail('maxLength', `must be at most ${n.maxLength} characters`);
      }
      if (n.pattern !== undefined && !new RegExp(n.pattern, 'u').test(value)) fail('pattern', `must match ${n.pattern}`);
      return;
    }
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return fail('type', 'must be an integer');
      if ((n.minimum !== undefined && value < n.minimum) || (n.maximum !== undefined && value > n.maximum)) fail('minimum', `must be between ${n.minimum} and ${n.maximum}`);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') fail('type', 'must be true or false');
      return;
    case 'array': {
      const nonEmpty = n.minItems === 1;
      if (!Array.isArray(value)) return fail('type', nonEmpty ? 'must be a non-empty array' : 'must be an array');
      if (n.minItems !== undefined && value.length < n.minItems) fail('minItems', nonEmpty ? 'must be a non-empty array' : `must have at least ${n.minItems} items`);
      if (n.items) value.forEach((item, i) => checkValue(item, n.items!, `${path}[${i}]`, root));
      return;
    }
    case 'object': {
      if (!isObject(value)) return fail('type', path === '' ? 'must be a JSON object' : 'must be an object');
      const properties = n.properties ?? {};
      const known = Object.keys(properties);
      // Unknown keys first: a misspelt key usually leaves a required one missing too, and the
      // misspelling is what the operator has to see.
      if (n.additionalProperties === false) {
        for (const key of Object.keys(value)) {
          if (!own(properties, key)) throw new ConfigError(childPath(path, key), unknownKeyMessage(key, known, root));
        }
      }
      for (const key of n.required ?? []) if (!own(value, key)) throw new ConfigError(childPath(path, key), 'is missing');
      for (const key of known) if (own(value, key)) checkValue(value[key], properties[key]!, childPath(path, key), root);
      return;
    }
    default:
      throw new Error(`config.schema.json: ${field} has no type this checker knows`);
  }
}

/** Checks a whole config file's contents against config.schema.json. */
export function checkAgainstSchema(raw: unknown): void {
  checkValue(raw, CONFIG_SCHEMA, '');
}
