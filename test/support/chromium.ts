// Debian's headless Chromium (/usr/bin/chromium, or PALISADE_CHROMIUM) through playwright-core,
// with a fresh profile per launch. Tests that need it FAIL without it, on purpose: a page
// nobody loads is not tested. `.ci/run` installs it (apt-get install chromium).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.PALISADE_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  readonly context: BrowserContext;
  /** The first page of the context. */
  readonly page: Page;
  close(): Promise<void>;
}

/** A browser with a fresh profile; `args` are added to Chromium's command line. */
export async function launchChromium(args: readonly string[] = [], viewport = { width: 1360, height: 900 }): Promise<Browser> {
  assert.ok(
    existsSync(CHROMIUM),
    `chromium is not installed at ${CHROMIUM}: this test needs it. Install it with ` +
      '`apt-get update && apt-get install -y chromium` (.ci/run does this), or point PALISADE_CHROMIUM at a Chromium binary.',
  );
  const profile = mkdtempSync(join(tmpdir(), 'palisade-chromium-'));
  // launchPersistentContext is how Playwright takes a --user-data-dir: a fresh profile each run.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: [...ARGS, ...args], viewport });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
