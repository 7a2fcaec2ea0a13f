// Text from the cluster on the operator's terminal. Lock, election and key names, election
// and key values, and the messages that quote them were written by any client; a name with
// ESC or BEL in it printed raw can move the cursor, rewrite earlier lines, retitle the
// window or worse, on the terminal of whoever runs `palisade locks` or `snapshot inspect`.
// So every such string is printed with its control characters escaped: C0 and C1 controls,
// DEL, the bidirectional overrides that reorder what is shown, and lone surrogates.

/** Characters a terminal may act on rather than show (Unicode Cc, bidi controls). */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const UNPRINTABLE_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function escape(c: string): string {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `s` with every control character written as an escape (`\x1b`, `\u202e`). */
export function printable(s: string): string {
  return s.replace(UNPRINTABLE, escape);
}

/** A message of our own that may quote the cluster: its own line breaks kept. */
export function printableMessage(s: string): string {
  return s.replace(UNPRINTABLE_BUT_NEWLINE, escape);
}

/** What JSON.stringify leaves raw in strings: it escapes C0 controls and lone surrogates. */
const UNESCAPED_BY_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** JSON for the terminal: DEL, C1 and the bidi controls written as \u escapes too (the same
 *  JSON value; JSON.stringify escapes the rest). */
export function safeJson(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent).replace(UNESCAPED_BY_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
