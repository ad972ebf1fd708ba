/**
 * collectd for end-to-end tests (Debian's collectd-core): a configuration of the test's, written in
 * its temporary directory, and the daemon run in the foreground with it, its output collected.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const COLLECTD = "/usr/sbin/collectd";
export const COLLECTD_PLUGINS = "/usr/lib/collectd";
const COLLECTD_TYPES = "/usr/share/collectd/types.db";

/**
 * Why collectd with `plugin` cannot run here (printed once, for the skipped tests), or undefined.
 * @param what the tests that are skipped, for the message
 */
export function collectdMissing(plugin: string, what: string): string | undefined {
  for (const file of [COLLECTD, join(COLLECTD_PLUGINS, `${plugin}.so`)]) {
    if (!existsSync(file)) {
      const reason = `${file} is not installed (Debian package collectd-core): ${what} are skipped`;
      console.warn(reason);
      return reason;
    }
  }
  return undefined;
}

/** A collectd running in the foreground. */
export interface Collectd {
  readonly child: ChildProcess;
  /** What it wrote to stdout and stderr so far. */
  output(): string;
  /** Stops it (SIGTERM) and resolves once it exited. */
  stop(): Promise<void>;
}

/**
 * Writes `collectd.conf` in `directory` (host name `hostname`, an interval of 1 s, then `lines`:
 * the plugins and their blocks) and starts `collectd -f -C` with it.
 */
export function startCollectd(directory: string, hostname: string, lines: readonly string[]): Collectd {
  const configFile = join(directory, "collectd.conf");
  writeFileSync(
    configFile,
    [
      `Hostname ${JSON.stringify(hostname)}`,
      "FQDNLookup false",
      `BaseDir ${JSON.stringify(directory)}`,
      `PIDFile ${JSON.stringify(join(directory, "collectd.pid"))}`,
      `PluginDir ${JSON.stringify(COLLECTD_PLUGINS)}`,
      `TypesDB ${JSON.stringify(COLLECTD_TYPES)}`,
      "Interval 1",
      ...lines,
      "",
    ].join("\n"),
  );
  const child = spawn(COLLECTD, ["-f", "-C", configFile], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  return {
    child,
    output: () => output,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((resolve) => (child.exitCode === null ? child.once("exit", resolve) : resolve(null)));
    },
  };
}
