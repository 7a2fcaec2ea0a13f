#!/usr/bin/env node
// Writes docs/internals.md's "File map" (between its two markers): every source file under
// src/, folder by folder, with the first sentence of its opening comment. `npm run
// docs:files` after adding, moving or renaming a file; test/ops/file-map.test.ts fails while
// the page and the tree disagree.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const PAGE = join(ROOT, 'docs/internals.md');
const BEGIN = '<!-- file map: begin (npm run docs:files) -->';
const END = '<!-- file map: end -->';

function walk(dir, out = []) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The first sentence of the file's opening // comment (or its first line). */
function summary(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const comment = [];
  for (const line of lines) {
    const m = /^\/\/ ?(.*)$/.exec(line);
    if (!m) break;
    comment.push(m[1]);
  }
  const text = comment.join(' ').replace(/\s+/g, ' ').trim();
  const first = /^(.+?\.)(\s|$)/.exec(text)?.[1] ?? text;
  return (first.length > 180 ? `${first.slice(0, 177)}...` : first).replace(/\|/g, '\\|') || '(no opening comment)';
}

export function fileMap() {
  const files = walk(join(ROOT, 'src'));
  const byFolder = new Map();
  for (const f of files) {
    const rel = relative(ROOT, f);
    const folder = rel.slice(0, rel.lastIndexOf('/'));
    if (!byFolder.has(folder)) byFolder.set(folder, []);
    byFolder.get(folder).push(rel);
  }
  const out = [BEGIN, ''];
  for (const [folder, list] of byFolder) {
    out.push(`**\`${folder}/\`**`, '', '| file | what it is |', '|---|---|');
    for (const rel of list) out.push(`| \`${rel.slice(folder.length + 1)}\` | ${summary(join(ROOT, rel))} |`);
    out.push('');
  }
  out.push(END);
  return out.join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const page = readFileSync(PAGE, 'utf8');
  const a = page.indexOf(BEGIN);
  const b = page.indexOf(END);
  if (a < 0 || b < 0) throw new Error(`docs/internals.md has no file map markers (${BEGIN})`);
  writeFileSync(PAGE, page.slice(0, a) + fileMap() + page.slice(b + END.length));
}
