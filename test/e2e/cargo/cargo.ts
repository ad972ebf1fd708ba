/**
 * The stock `cargo` run by the Cargo registry's end-to-end test: a `CARGO_HOME` in a temporary
 * directory whose `config.toml` names Vigie's sparse indexes, an environment cleared of the
 * caller's `CARGO_*` variables, and small crates written from a description.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The `cargo` binary on the PATH, or "" when there is none. */
export const CARGO = spawnSync("sh", ["-c", "command -v cargo"], { encoding: "utf8" }).stdout?.trim() ?? "";

/** What a cargo run left: its exit code (or signal) and its two outputs. */
export interface CargoResult {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** The environment variable that carries a registry's token (`CARGO_REGISTRIES_<NAME>_TOKEN`). */
export function tokenVariable(registry: string): string {
  return `CARGO_REGISTRIES_${registry.toUpperCase().replaceAll("-", "_")}_TOKEN`;
}

/** The process environment without any `CARGO_*` variable nor proxy setting. */
function cleanEnvironment(): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("CARGO_") || /^(https?|all|no)_proxy$/i.test(key)) continue;
    environment[key] = value;
  }
  return environment;
}

/**
 * One `CARGO_HOME` (and one target directory) with the given registries in its `config.toml`.
 * Sharing it between runs lets Cargo reuse its index cache and downloaded crates.
 */
export class CargoHome {
  readonly home: string;
  readonly target: string;

  /**
   * @param directory an empty directory; `home/` and `target/` are made in it
   * @param registries registry name → base URL of a Vigie (`http://127.0.0.1:<port>`)
   */
  constructor(directory: string, registries: Record<string, string>) {
    this.home = join(directory, "home");
    this.target = join(directory, "target");
    mkdirSync(this.home, { recursive: true });
    mkdirSync(this.target, { recursive: true });
    const lines: string[] = [];
    for (const [name, baseUrl] of Object.entries(registries)) {
      lines.push(
        `[registries.${name}]`,
        `index = "sparse+${baseUrl}/api/v1/cargo/index/"`,
        `credential-provider = "cargo:token"`,
        "",
      );
    }
    // No retries, no proxy, and a bounded wait for a new version to show in the index.
    lines.push("[net]", "retry = 0", "", "[http]", 'proxy = ""', "timeout = 30", "");
    writeFileSync(join(this.home, "config.toml"), lines.join("\n"));
  }

  /**
   * Runs `cargo <args>` in `cwd` with this home and target directory.
   * @param options.tokens registry name → token, passed as `CARGO_REGISTRIES_<NAME>_TOKEN`
   * @param options.env more environment variables
   */
  run(
    args: readonly string[],
    options: { cwd: string; tokens?: Record<string, string>; env?: Record<string, string> },
  ): Promise<CargoResult> {
    const environment: Record<string, string> = {
      ...cleanEnvironment(),
      CARGO_HOME: this.home,
      CARGO_TARGET_DIR: this.target,
      CARGO_TERM_COLOR: "never",
      CARGO_TERM_PROGRESS_WHEN: "never",
      CARGO_NET_RETRY: "0",
      CARGO_INCREMENTAL: "0",
      ...options.env,
    };
    for (const [registry, token] of Object.entries(options.tokens ?? {})) environment[tokenVariable(registry)] = token;
    const child = spawn(CARGO, args, { cwd: options.cwd, env: environment, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    return new Promise((done, reject) => {
      child.once("error", reject);
      child.once("close", (code, signal) => done({ code: code ?? signal ?? -1, stdout, stderr }));
    });
  }
}

/** A dependency on a crate of a registry named in the Cargo home's configuration. */
export interface RegistryDependency {
  version: string;
  registry: string;
}

/** A crate to write: a library (`lib`) or a binary (`main`). */
export interface CrateDescription {
  name: string;
  version: string;
  description?: string;
  keywords?: readonly string[];
  /** Registries it may be published to (`publish = [...]`); none: `publish = false`. */
  publish?: readonly string[];
  dependencies?: Record<string, RegistryDependency>;
  /** `src/lib.rs` */
  lib?: string;
  /** `src/main.rs` */
  main?: string;
  /** `build.rs`, the build script */
  build?: string;
}

const quoted = (text: string) => JSON.stringify(text);

/** Writes `<directory>/Cargo.toml` and its source file; returns `directory`. */
export function writeCrate(directory: string, crate: CrateDescription): string {
  mkdirSync(join(directory, "src"), { recursive: true });
  const lines = [
    "[package]",
    `name = ${quoted(crate.name)}`,
    `version = ${quoted(crate.version)}`,
    'edition = "2021"',
    'license = "MIT"',
  ];
  if (crate.description !== undefined) lines.push(`description = ${quoted(crate.description)}`);
  if (crate.keywords !== undefined) lines.push(`keywords = [${crate.keywords.map(quoted).join(", ")}]`);
  lines.push(crate.publish === undefined ? "publish = false" : `publish = [${crate.publish.map(quoted).join(", ")}]`);
  lines.push("", "[dependencies]");
  for (const [name, dependency] of Object.entries(crate.dependencies ?? {})) {
    lines.push(`${name} = { version = ${quoted(dependency.version)}, registry = ${quoted(dependency.registry)} }`);
  }
  // An empty workspace table: the crate is its own workspace whatever lies above the directory.
  lines.push("", "[workspace]", "");
  writeFileSync(join(directory, "Cargo.toml"), lines.join("\n"));
  if (crate.lib !== undefined) writeFileSync(join(directory, "src", "lib.rs"), crate.lib);
  if (crate.main !== undefined) writeFileSync(join(directory, "src", "main.rs"), crate.main);
  if (crate.build !== undefined) writeFileSync(join(directory, "build.rs"), crate.build);
  return directory;
}

/** The version of `name` that a `Cargo.lock` holds, or undefined. */
export function lockedVersion(lockFile: string, name: string): string | undefined {
  const pattern = new RegExp(`\\[\\[package\\]\\]\\nname = "${name}"\\nversion = "([^"]+)"`);
  return pattern.exec(lockFile)?.[1];
}

/** Both outputs of a run, for assertion messages. */
export function outputOf(result: CargoResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
}
