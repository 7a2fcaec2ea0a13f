// The status page: plain files from web/ at the package root, served as they are (no build
// step). The same relative path works from src/server/http (tsx) and dist/server/http.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url));

/** URL path -> file in web/ and its content type. Only these are served. */
const FILES: ReadonlyMap<string, { file: string; type: string }> = new Map([
  ['/', { file: 'index.html', type: 'text/html; charset=utf-8' }],
  ['/index.html', { file: 'index.html', type: 'text/html; charset=utf-8' }],
  ['/app.js', { file: 'app.js', type: 'text/javascript; charset=utf-8' }],
  ['/style.css', { file: 'style.css', type: 'text/css; charset=utf-8' }],
  // A browser asks for it on every page; an SVG answers instead of a 404 in the console.
  ['/favicon.ico', { file: 'favicon.svg', type: 'image/svg+xml' }],
]);

export async function staticFile(path: string): Promise<{ body: Buffer; type: string } | null> {
  const f = FILES.get(path);
  if (!f) return null;
  // Read on each request: the files are small, and an edited page shows on reload.
  return { body: await readFile(WEB_DIR + f.file), type: f.type };
}
