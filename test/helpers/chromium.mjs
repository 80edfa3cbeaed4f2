// Debian's Chromium through playwright-core (which never downloads a browser), as the browser tests start it.
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** A headless Chromium with nothing of its own going to the network (no updates, no sync). */
export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}
