/**
 * The Cargo mirror (docs/cargo.md, "Using the mirror for CI") with the stock `cargo` and two real
 * `vigie` processes: an upstream registry to which cargo publishes crates, and a mirror whose
 * `upstream-index` names the upstream's sparse index through a counting proxy. A fresh project
 * whose crates.io is replaced by the mirror builds through it; a corrupted download is refused;
 * 50 concurrent `cargo fetch` runs make one upstream download; with the upstream stopped, a
 * second fresh build (new CARGO_HOME) still works from the mirror's cache. Cargo never reaches
 * the internet: every source is on loopback.
 */
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { CARGO, CargoHome, type CargoResult, outputOf, writeCrate } from "./cargo/cargo.js";
import { CountingProxy } from "./cargo/proxy.js";

if (CARGO === "") console.warn("skipping the Cargo mirror e2e test: no cargo binary on the PATH (https://rustup.rs)");

const ROOT = { name: "root", password: "root-password" };
const ok = (result: CargoResult) => expect(result.code, outputOf(result)).toBe(0);
const CARGO_TIMEOUT = 240_000;
/** `cargo fetch` runs at once in the single-flight test. */
const CONCURRENT = 50;

/** Starts a Vigie from YAML lines under `registry:` (SQLite in its own directory). */
async function startVigieWith(registry: readonly string[]): Promise<{ vigie: VigieProcess; directory: string }> {
  const directory = temporaryDirectory();
  const port = await freePort();
  const configFile = join(directory, "vigie.yaml");
  writeFileSync(
    configFile,
    [
      "http:",
      "  host: 127.0.0.1",
      `  port: ${port}`,
      "log-level: warn",
      "database:",
      `  url: ${JSON.stringify(`sqlite:${join(directory, "vigie.db")}`)}`,
      "registry:",
      "  enabled: true",
      ...registry.map((line) => `  ${line}`),
      "",
    ].join("\n"),
  );
  const vigie = await startVigie({
    configFile,
    port,
    cwd: directory,
    env: { VIGIE_ADMIN_NAME: ROOT.name, VIGIE_ADMIN_PASSWORD: ROOT.password },
  });
  return { vigie, directory };
}

/** A new token of root on the Vigie at `baseUrl`. */
async function tokenOf(baseUrl: string): Promise<string> {
  const answer = await fetch(`${baseUrl}/api/v1/registry/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      name: `cargo-${Math.random().toString(36).slice(2, 8)}`,
      user: ROOT.name,
      password: ROOT.password,
    }),
  });
  expect(answer.status).toBe(201);
  return ((await answer.json()) as { token: string }).token;
}

/** A Cargo home whose crates.io is replaced by the mirror (`[source.crates-io] replace-with`). */
function mirrorHome(directory: string, mirror: VigieProcess): CargoHome {
  const home = new CargoHome(directory, {});
  appendFileSync(
    join(home.home, "config.toml"),
    [
      "[source.crates-io]",
      'replace-with = "vigie-mirror"',
      "",
      "[source.vigie-mirror]",
      `registry = "sparse+${mirror.baseUrl}/api/v1/mirror/index/"`,
      "",
    ].join("\n"),
  );
  return home;
}

/** A library crate published to the upstream. */
const library = (name: string, body: string, dependencies = {}) => ({
  name,
  version: "0.1.0",
  description: `${name}, a crate of the mirror's end-to-end test`,
  publish: ["upstream"],
  dependencies,
  lib: body,
});

/** A binary crate depending on crates.io crates `dependencies` (`name = "0.1"`), which the mirror serves. */
function consumer(directory: string, dependencies: readonly string[], main = "fn main() {}\n"): string {
  writeCrate(directory, { name: "consumer", version: "0.1.0", main });
  const manifest = join(directory, "Cargo.toml");
  const text = dependencies.map((name) => `${name} = "0.1"`).join("\n");
  // Plain crates.io dependencies, which the source replacement sends to the mirror.
  writeFileSync(manifest, readFileSync(manifest, "utf8").replace("[dependencies]\n", `[dependencies]\n${text}\n`));
  return directory;
}

describe.skipIf(CARGO === "")("the Cargo mirror with the stock cargo", () => {
  let upstream: VigieProcess | undefined;
  let mirror: VigieProcess;
  let mirrorDirectory: string;
  let proxy: CountingProxy;
  let work: string;

  beforeAll(async () => {
    work = temporaryDirectory();
    ({ vigie: upstream } = await startVigieWith(["cargo:", "  enabled: true"]));
    proxy = new CountingProxy(upstream.baseUrl);
    await proxy.start();
    const secret = await tokenOf(upstream.baseUrl);
    const publisher = new CargoHome(join(work, "publisher"), { upstream: upstream.baseUrl });
    const crates = [
      library("mirror-a", "pub fn value() -> u32 {\n    7\n}\n"),
      library("mirror-b", "pub fn twice() -> u32 {\n    mirror_a::value() * 2\n}\n", {
        "mirror-a": { version: "0.1", registry: "upstream" },
      }),
      library("mirror-bad", "pub fn bad() {}\n"),
      library("mirror-many", "pub fn many() {}\n"),
    ];
    for (const crate of crates) {
      const published = await publisher.run(["publish", "--registry", "upstream", "--no-verify"], {
        cwd: writeCrate(join(work, crate.name), crate),
        tokens: { upstream: secret },
      });
      ok(published);
    }
    // max-age 0: every index request asks the upstream again, so the stopped upstream shows.
    ({ vigie: mirror, directory: mirrorDirectory } = await startVigieWith([
      "cargo:",
      "  mirror:",
      "    enabled: true",
      `    upstream-index: ${proxy.baseUrl}/api/v1/cargo/index/`,
      `    upstream-download: ${proxy.baseUrl}/api/v1/crates`,
      "    max-age: 0",
    ]));
  }, CARGO_TIMEOUT);

  afterAll(async () => {
    await stopVigie(mirror);
    await stopVigie(upstream);
    await proxy?.stop();
  });

  it(
    "builds a fresh project through the mirror, which fetches each file once",
    async () => {
      const project = consumer(
        join(work, "app"),
        ["mirror-b"],
        'fn main() {\n    println!("twice is {}", mirror_b::twice());\n}\n',
      );
      const home = mirrorHome(join(work, "home-1"), mirror);
      const built = await home.run(["run", "--quiet"], { cwd: project });
      ok(built);
      expect(built.stdout).toBe("twice is 14\n");
      expect(proxy.count("/api/v1/crates/mirror-a/0.1.0/download")).toBe(1);
      expect(proxy.count("/api/v1/crates/mirror-b/0.1.0/download")).toBe(1);
      // The mirror's cache, beside its database, holds both .crate files.
      expect(readdirSync(join(mirrorDirectory, "crates-mirror", "crates")).sort()).toEqual(["mirror-a", "mirror-b"]);
      // Cargo's cache holds the mirror's index only: nothing came from crates.io.
      expect(readdirSync(join(home.home, "registry", "index")).every((name) => name.startsWith("127.0.0.1-"))).toBe(
        true,
      );
    },
    CARGO_TIMEOUT,
  );

  it(
    "refuses a corrupted upstream .crate, and caches nothing of it",
    async () => {
      proxy.corrupted.add("/api/v1/crates/mirror-bad/0.1.0/download");
      const project = consumer(join(work, "bad"), ["mirror-bad"]);
      const home = mirrorHome(join(work, "home-bad"), mirror);
      const fetched = await home.run(["fetch"], { cwd: project });
      expect(fetched.code, outputOf(fetched)).toBe(101);
      expect(fetched.stderr).toContain("does not match the index's checksum");
      expect(existsSync(join(mirrorDirectory, "crates-mirror", "crates", "mirror-bad", "mirror-bad-0.1.0.crate"))).toBe(
        false,
      );
      proxy.corrupted.clear();
    },
    CARGO_TIMEOUT,
  );

  it(
    `makes one upstream download for ${CONCURRENT} concurrent cargo fetches of one crate`,
    async () => {
      const path = "/api/v1/crates/mirror-many/0.1.0/download";
      // The upstream answers slowly: the fetches arrive while the first download is running.
      proxy.delays.set(path, 3_000);
      const runs = Array.from({ length: CONCURRENT }, (_, index) => {
        const project = consumer(join(work, `many-${index}`), ["mirror-many"]);
        return mirrorHome(join(work, `home-many-${index}`), mirror).run(["fetch"], { cwd: project });
      });
      for (const result of await Promise.all(runs)) ok(result);
      expect(proxy.count(path)).toBe(1);
    },
    CARGO_TIMEOUT,
  );

  it(
    "with auth-required, cargo sends the token of the registry that replaces crates.io",
    async () => {
      const { vigie: guarded } = await startVigieWith([
        "cargo:",
        "  auth-required: true",
        "  mirror:",
        "    enabled: true",
        `    upstream-index: ${proxy.baseUrl}/api/v1/cargo/index/`,
        `    upstream-download: ${proxy.baseUrl}/api/v1/crates`,
      ]);
      try {
        const project = consumer(join(work, "guarded"), ["mirror-a"]);
        // A registry (not a plain source) replaces crates.io: cargo then has a name to find its token by.
        const home = new CargoHome(join(work, "home-guarded"), {});
        appendFileSync(
          join(home.home, "config.toml"),
          [
            "[registries.vigie-mirror]",
            `index = "sparse+${guarded.baseUrl}/api/v1/mirror/index/"`,
            'credential-provider = "cargo:token"',
            "",
            "[source.crates-io]",
            'replace-with = "vigie-mirror"',
            "",
          ].join("\n"),
        );
        const refused = await home.run(["fetch"], { cwd: project });
        expect(refused.code, outputOf(refused)).toBe(101);
        // config.json answered 401 with Cargo's challenge: cargo asks for the registry's token.
        expect(refused.stderr).toContain("no token found for `vigie-mirror`");
        const token = await tokenOf(guarded.baseUrl);
        ok(await home.run(["fetch"], { cwd: project, tokens: { "vigie-mirror": token } }));
      } finally {
        await stopVigie(guarded);
      }
    },
    CARGO_TIMEOUT,
  );

  it(
    "builds a second fresh project from the cache once the upstream is stopped",
    async () => {
      await stopVigie(upstream);
      upstream = undefined;
      const project = consumer(
        join(work, "app-2"),
        ["mirror-b"],
        'fn main() {\n    println!("still {}", mirror_b::twice());\n}\n',
      );
      const home = mirrorHome(join(work, "home-2"), mirror);
      const built = await home.run(["run", "--quiet"], { cwd: project });
      ok(built);
      expect(built.stdout).toBe("still 14\n");
      const index = await fetch(`${mirror.baseUrl}/api/v1/mirror/index/mi/rr/mirror-b`);
      expect(index.status).toBe(200);
      expect(index.headers.get("warning")).toBe('110 - "Response is Stale"');
      const metrics = await (await fetch(`${mirror.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/^registry_mirror_stale_total [1-9]/m);
    },
    CARGO_TIMEOUT,
  );
});
