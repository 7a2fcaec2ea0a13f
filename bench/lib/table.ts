// A plain-text table with a header row and columns padded to their widest cell, in the
// Markdown pipe syntax so that a printed table pastes into docs/benchmarks.md as it is.

export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const width = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${width.map((w, i) => (r[i] ?? '').padEnd(w)).join(' | ')} |`;
  const rule = `|${width.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}
