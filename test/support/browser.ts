/**
 * Debian's Chromium driven by playwright-core for end-to-end tests: never a downloaded browser
 * (`.ci/run` installs the `chromium` package). The flags keep it from reaching the network on its
 * own (updates, sync, background services), which this machine's closed network refuses.
 */
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Launches headless Chromium; close it in `afterAll`. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}
