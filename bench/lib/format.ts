// How the bench's tables print numbers: whole numbers with thousands separators, and a
// figure with the decimals its size warrants (2.41, 24.1, 241), so columns stay short.

export const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** '' for a missing value: a table cell left empty. */
export const figure = (n: number | null | undefined): string =>
  n == null ? '' : Math.abs(n) < 10 ? n.toFixed(2) : Math.abs(n) < 100 ? n.toFixed(1) : int(n);
