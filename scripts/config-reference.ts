// Writes the config reference (rendered from config.schema.json) into docs/configuration.md,
// between its markers: `npm run docs:config`.
import { readFileSync, writeFileSync } from 'node:fs';
import { REFERENCE_BEGIN, REFERENCE_END, renderReference } from '../src/config/reference.js';

const page = new URL('../docs/configuration.md', import.meta.url);
const text = readFileSync(page, 'utf8');
const begin = text.indexOf(REFERENCE_BEGIN);
const end = text.indexOf(REFERENCE_END);
if (begin < 0 || end < begin) throw new Error('docs/configuration.md has no config reference markers');
writeFileSync(page, text.slice(0, begin) + renderReference() + text.slice(end + REFERENCE_END.length));
