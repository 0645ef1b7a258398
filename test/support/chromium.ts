import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

// The one place the browser tests learn where Chromium is, whether to run, and how to launch it,
// so that every suite skips (or fails) for the same reason and with the same message.

/** The Chromium the browser tests drive: CHROMIUM_PATH, or where Debian's `chromium` package puts it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether Chromium is there. Without it a developer's run skips the browser suites with a warning, but a
 * CI run fails: a CI image that lost its browser would otherwise pass while testing no page at all.
 */
function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: CI must run the browser tests (install it, or set CHROMIUM_PATH)`);
  }
  console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return false;
}

export const HAS_CHROMIUM: boolean = chromiumAvailable();

/**
 * Headless Chromium with the arguments every browser test needs (no sandbox, as in a container; no GPU;
 * no first-run screens). `extraArgs` are a suite's own additions to those, kept visible at its call.
 */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', ...extraArgs] });
}
