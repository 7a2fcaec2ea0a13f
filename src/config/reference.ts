// The reference table of docs/configuration.md, rendered from config.schema.json: one row per
// key (every key the schema names, so every key the validator accepts). `npm run docs:config`
// writes it into the page; test/config/schema.test.ts checks the page holds exactly this.
import { CONFIG_SCHEMA, schemaAt, schemaKeyPaths, type SchemaNode } from './schema.js';

export const REFERENCE_BEGIN = '<!-- config reference: generated from config.schema.json by `npm run docs:config` -->';
export const REFERENCE_END = '<!-- end of config reference -->';

const number = (n: number): string => (Math.abs(n) >= 1_000 ? n.toLocaleString('en-US') : String(n));

function typeOf(n: SchemaNode): string {
  if (n.enum) return n.enum.map((e) => `\`"${e}"\``).join(' or ');
  switch (n.type) {
    case 'integer':
      return `integer, ${number(n.minimum!)}–${number(n.maximum!)}`;
    case 'array':
      return n.items?.type === 'string' ? 'array of strings' : 'array of objects';
    default:
      return n.type ?? '';
  }
}

function defaultOf(n: SchemaNode, required: boolean): string {
  if (required) return 'required';
  if (n['x-default'] !== undefined) return n['x-default'];
  if (n.default !== undefined) return typeof n.default === 'number' ? number(n.default) : `\`${JSON.stringify(n.default)}\``;
  return 'absent';
}

/** Whether the key at `path` is required where it appears (its parent's `required`;
 *  schemaAt("nodes[]") is the schema of one node). */
function isRequired(path: string): boolean {
  const i = path.lastIndexOf('.');
  const parent = i < 0 ? CONFIG_SCHEMA : schemaAt(path.slice(0, i));
  return (parent.required ?? []).includes(path.slice(i + 1));
}

/** The markdown table, with the markers around it. */
export function renderReference(): string {
  const rows = schemaKeyPaths().map((path) => {
    const n = schemaAt(path);
    const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
    return `| \`${path}\` | ${cell(typeOf(n))} | ${cell(defaultOf(n, isRequired(path)))} | ${cell(n.description ?? '')} |`;
  });
  return [REFERENCE_BEGIN, '', '| key | type | default | meaning |', '| --- | --- | --- | --- |', ...rows, '', REFERENCE_END].join('\n');
}

/** The key paths a rendered reference lists, in order. */
export function referencedKeys(markdown: string): string[] {
  const begin = markdown.indexOf(REFERENCE_BEGIN);
  const end = markdown.indexOf(REFERENCE_END);
  if (begin < 0 || end < begin) return [];
  return [...markdown.slice(begin, end).matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
}
