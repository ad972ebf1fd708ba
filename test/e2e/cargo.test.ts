/**
 * The Cargo registry (docs/cargo.md) with the stock `cargo` against the real `vigie` process: publish
 * a library `a` (0.1.0, 0.2.0) and `b` depending on `a = "0.1"`, build and run a fresh binary that
 * depends on `b` (Cargo fetches both through the sparse index and downloads), yank and unyank as a
 * fresh lockfile sees them, owners, search, refusals (a non-owner, a version published twice,
 * token scopes), then a second server with `auth-required: true`. Cargo never reaches crates.io:
 * the crates have no crates.io dependency, and the test checks Cargo's cache holds only Vigie's
 * indexes. What Cargo gives no view of is checked over HTTP.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metadataOf, publishBody, validCrate } from "../registry/cargo/frames.js";
import { freePort, startVigie, stopVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";
import { until } from "../support/until.js";
import { CARGO, CargoHome, type CargoResult, lockedVersion, outputOf, writeCrate } from "./cargo/cargo.js";
import { putCrate } from "./cargo/frame.js";

if (CARGO === "") console.warn("skipping the Cargo registry e2e test: no cargo binary on the PATH (https://rustup.rs)");

/** The server's sentences (src/registry/cargo), which Cargo prints from `{"errors": [{"detail"}]}`. */
const SAYS = {
  notOwner: (crate: string) => `you are not an owner of crate ${crate}`,
  exists: (crate: string, version: string) => `crate ${crate} version ${version} already exists`,
  /** The 409 of a publish racing another one of the same version. */
  raced: (crate: string, version: string) =>
    new RegExp(
      `crate ${crate} version ${version.replaceAll(".", "\\.")} (already exists|is being published by another request)`,
    ),
  noVersion: (crate: string, version: string) => `crate ${crate} has no version ${version}`,
  needsToken: "this registry needs a token",
  scopedElsewhere: "a token with scopes is for Cargo only",
  lastOwner: (crate: string) => `cannot remove every owner of crate ${crate}: add another one first`,
  ownerAdded: (user: string, crate: string) => `user ${user} has been added as an owner of crate ${crate}`,
  lacksScope: (scope: string) => `this token lacks the scope ${scope}`,
  notForCrate: (crate: string, patterns: string) => `this token is not for crate ${crate} (its crates: ${patterns})`,
  invalidToken: "invalid token",
};

const ROOT = { name: "root", password: "root-password" };
const BOB = { name: "bob", password: "bob-password", description: "Bob the co-owner" };
/** A cargo run's whole output in the assertion message. */
const ok = (result: CargoResult) => expect(result.code, outputOf(result)).toBe(0);
const failed = (result: CargoResult) => expect(result.code, outputOf(result)).toBe(101);
const CARGO_TIMEOUT = 180_000;

/** Starts a Vigie with the Cargo registry on SQLite and `root` as its first admin. */
async function startRegistry(authRequired: boolean): Promise<VigieProcess> {
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
      "  cargo:",
      "    enabled: true",
      `    auth-required: ${authRequired}`,
      "    max-crate-size: 10MiB",
      `    storage: ${JSON.stringify(join(directory, "crates"))}`,
      "",
    ].join("\n"),
  );
  return startVigie({
    configFile,
    port,
    cwd: directory,
    env: { VIGIE_ADMIN_NAME: ROOT.name, VIGIE_ADMIN_PASSWORD: ROOT.password },
  });
}

async function api(
  vigie: VigieProcess,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; text: string; json: () => Record<string, unknown> }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = options.token;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${vigie.baseUrl}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

/** A new token of `user` (POST /api/v1/registry/token), with optional Cargo scopes. */
async function tokenOf(
  vigie: VigieProcess,
  user: { name: string; password: string },
  name: string,
  restrictions: { scopes?: string[]; crates?: string[] } = {},
): Promise<string> {
  const answer = await api(vigie, "POST", "/api/v1/registry/token", {
    body: { name, user: user.name, password: user.password, ...restrictions },
  });
  expect(answer.status, answer.text).toBe(201);
  return answer.json().token as string;
}

interface CrateView {
  name: string;
  versions: Array<{ version: string; yanked: boolean; downloads: number }>;
  owners: Array<{ name: string; description: string }>;
}

/** `GET /api/v1/registry/crates/<name>`: versions (yanked flag, download count) and owners. */
async function crateView(vigie: VigieProcess, token: string, name: string): Promise<CrateView> {
  const answer = await api(vigie, "GET", `/api/v1/registry/crates/${name}`, { token });
  expect(answer.status, answer.text).toBe(200);
  return answer.json() as unknown as CrateView;
}

/** The directories of Cargo's index cache: one per registry it queried. */
function cachedIndexes(cargo: CargoHome): string[] {
  try {
    return readdirSync(join(cargo.home, "registry", "index"));
  } catch {
    return [];
  }
}

const libA = (version: string, value: number) => ({
  name: "a",
  version,
  description: "Arithmetic helpers of the vigie end-to-end test",
  keywords: ["vigie-e2e"],
  publish: ["vigie"],
  lib: `/// What this version computes.\npub fn value() -> u32 {\n    ${value}\n}\n`,
});

/** A build script that takes a second. */
const SLOW_BUILD = "fn main() {\n    std::thread::sleep(std::time::Duration::from_millis(1000));\n}\n";

describe.skipIf(CARGO === "")("the Cargo registry with the stock cargo", () => {
  let vigie: VigieProcess;
  let privateVigie: VigieProcess | undefined;
  let cargo: CargoHome;
  let work: string;
  let root: string;
  let bob: string;

  beforeAll(async () => {
    work = temporaryDirectory();
    vigie = await startRegistry(false);
    cargo = new CargoHome(join(work, "cargo"), { vigie: vigie.baseUrl });
    root = await tokenOf(vigie, ROOT, "cargo");
    const created = await api(vigie, "POST", "/api/v1/registry/user", {
      token: root,
      body: { name: BOB.name, description: BOB.description, password: BOB.password, role: "tech", active: true },
    });
    expect(created.status, created.text).toBe(201);
    bob = await tokenOf(vigie, BOB, "cargo");
  });

  afterAll(async () => {
    await stopVigie(vigie);
    await stopVigie(privateVigie);
  });

  /** `cargo <args>` in `cwd` against the first server, with root's token unless another is given. */
  const run = (args: readonly string[], cwd: string, token = root, home = cargo) =>
    home.run(args, { cwd, tokens: { vigie: token } });
  const publish = (cwd: string, token = root, home = cargo) =>
    run(["publish", "--registry", "vigie"], cwd, token, home);

  it(
    "publishes a 0.1.0, then a 0.2.0, then b depending on a 0.1 from the registry",
    async () => {
      const config = await api(vigie, "GET", "/api/v1/cargo/index/config.json");
      expect(config.status, config.text).toBe(200);
      expect(config.json()).toEqual({ dl: `${vigie.baseUrl}/api/v1/crates`, api: vigie.baseUrl });

      for (const [version, value] of [
        ["0.1.0", 1],
        ["0.2.0", 2],
      ] as const) {
        const published = await publish(writeCrate(join(work, `a-${version}`), libA(version, value)));
        ok(published);
        expect(published.stderr).toContain(`Published a v${version}`);
      }
      const b = writeCrate(join(work, "b-0.1.0"), {
        name: "b",
        version: "0.1.0",
        description: "Builds on a with a zebra multiplier",
        keywords: ["vigie-e2e"],
        publish: ["vigie"],
        dependencies: { a: { version: "0.1", registry: "vigie" } },
        lib: "pub use a;\n\n/// Ten times what a computes.\npub fn compute() -> u32 {\n    a::value() * 10\n}\n",
      });
      const published = await publish(b);
      ok(published);
      expect(published.stderr).toContain("Published b v0.1.0");

      // The sparse index file of a: one line per version in publication order, revalidated with 304.
      const index = await api(vigie, "GET", "/api/v1/cargo/index/1/a");
      expect(index.status, index.text).toBe(200);
      const lines = index.text
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => [line.name, line.vers, line.yanked])).toEqual([
        ["a", "0.1.0", false],
        ["a", "0.2.0", false],
      ]);
      expect(lines[0]?.cksum).toMatch(/^[0-9a-f]{64}$/);
      const etag = index.headers.get("etag");
      expect(etag).toBeTruthy();
      expect(index.headers.get("last-modified")).toBeTruthy();
      const revalidated = await api(vigie, "GET", "/api/v1/cargo/index/1/A", {
        headers: { "if-none-match": etag ?? "" },
      });
      expect(revalidated.status).toBe(304);
      const bIndex = await api(vigie, "GET", "/api/v1/cargo/index/1/b");
      const bLine = JSON.parse(bIndex.text.trim()) as { deps: Array<Record<string, unknown>> };
      expect(bLine.deps).toEqual([expect.objectContaining({ name: "a", req: "^0.1", kind: "normal" })]);
      expect(bLine.deps[0]?.registry).toBeUndefined();
      expect((await api(vigie, "GET", "/api/v1/cargo/index/1/zz")).status).toBe(404);
    },
    CARGO_TIMEOUT,
  );

  it(
    "builds a fresh binary crate depending on b, fetching b and a from Vigie, and runs it",
    async () => {
      const app = writeCrate(join(work, "app"), {
        name: "vigie-e2e-app",
        version: "0.1.0",
        dependencies: { b: { version: "0.1", registry: "vigie" } },
        main: 'fn main() {\n    println!("a says {}, b says {}", b::a::value(), b::compute());\n}\n',
      });
      // A Cargo home of its own: b's publication already brought a into the shared one.
      const consumer = new CargoHome(join(work, "cargo-consumer"), { vigie: vigie.baseUrl });
      const built = await run(["build"], app, root, consumer);
      ok(built);
      expect(built.stderr).toMatch(/Downloaded b v0\.1\.0 \(registry `vigie`\)/);
      expect(built.stderr).toMatch(/Downloaded a v0\.1\.0 \(registry `vigie`\)/);
      expect(lockedVersion(readFileSync(join(app, "Cargo.lock"), "utf8"), "a")).toBe("0.1.0");
      const ran = await run(["run", "--quiet"], app, root, consumer);
      ok(ran);
      expect(ran.stdout).toBe("a says 1, b says 10\n");

      // The downloads are counted (the count may be written a moment later).
      for (const [name, version] of [
        ["a", "0.1.0"],
        ["b", "0.1.0"],
      ] as const) {
        const downloads = await until(async () => {
          const view = await crateView(vigie, root, name);
          const count = view.versions.find((entry) => entry.version === version)?.downloads ?? 0;
          return count > 0 ? count : undefined;
        }, `a download count of ${name} ${version}`);
        expect(downloads).toBeGreaterThan(0);
      }
      const view = await crateView(vigie, root, "a");
      expect(view.versions.map((entry) => [entry.version, entry.yanked])).toEqual([
        ["0.1.0", false],
        ["0.2.0", false],
      ]);
      expect(view.versions.find((entry) => entry.version === "0.2.0")?.downloads).toBe(0);
      expect(view.owners.map((owner) => owner.name)).toEqual(["root"]);

      // A download by hand: the .crate bytes whose SHA-256 the index names.
      const download = await fetch(`${vigie.baseUrl}/api/v1/crates/a/0.1.0/download`);
      expect(download.status).toBe(200);
      expect(download.headers.get("content-type")).toBe("application/gzip");
      const bytes = Buffer.from(await download.arrayBuffer());
      const line = JSON.parse((await api(vigie, "GET", "/api/v1/cargo/index/1/a")).text.split("\n")[0] ?? "");
      expect(createHash("sha256").update(bytes).digest("hex")).toBe(line.cksum);
      const missing = await api(vigie, "GET", "/api/v1/crates/a/9.9.9/download");
      expect(missing.status).toBe(404);
      expect(missing.json()).toEqual({ errors: [{ detail: expect.any(String) }] });
      const metrics = await (await fetch(`${vigie.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/^registry_downloads_total [1-9]/m);
    },
    CARGO_TIMEOUT,
  );

  it(
    "yank: a fresh lockfile wanting a >=0.1 picks 0.1.0 while 0.2.0 is yanked, and 0.2.0 again once unyanked",
    async () => {
      const pick = writeCrate(join(work, "pick"), {
        name: "vigie-e2e-pick",
        version: "0.1.0",
        dependencies: { a: { version: ">=0.1", registry: "vigie" } },
        main: "fn main() {}\n",
      });
      const lock = () => lockedVersion(readFileSync(join(pick, "Cargo.lock"), "utf8"), "a");
      ok(await run(["generate-lockfile"], pick));
      expect(lock()).toBe("0.2.0");

      const yanked = await run(["yank", "--registry", "vigie", "--version", "0.2.0", "a"], work);
      ok(yanked);
      expect(yanked.stderr).toContain("Yank a@0.2.0");
      ok(await run(["generate-lockfile"], pick));
      expect(lock()).toBe("0.1.0");
      let view = await crateView(vigie, root, "a");
      expect(view.versions.map((entry) => [entry.version, entry.yanked])).toEqual([
        ["0.1.0", false],
        ["0.2.0", true],
      ]);
      const index = await api(vigie, "GET", "/api/v1/cargo/index/1/a");
      expect(index.text).toMatch(/"vers":"0\.2\.0".*"yanked":true/);

      const unyanked = await run(["yank", "--registry", "vigie", "--undo", "--version", "0.2.0", "a"], work);
      ok(unyanked);
      expect(unyanked.stderr).toContain("Unyank a@0.2.0");
      ok(await run(["generate-lockfile"], pick));
      expect(lock()).toBe("0.2.0");
      view = await crateView(vigie, root, "a");
      expect(view.versions.map((entry) => entry.yanked)).toEqual([false, false]);

      // Yanking a version that does not exist: Cargo shows the server's 404.
      const unknown = await run(["yank", "--registry", "vigie", "--version", "7.0.0", "a"], work);
      failed(unknown);
      expect(unknown.stderr).toContain("404");
      expect(unknown.stderr).toContain(SAYS.noVersion("a", "7.0.0"));
    },
    CARGO_TIMEOUT,
  );

  it(
    "cargo search finds crates by words of their name, description and keywords",
    async () => {
      const zebra = await run(["search", "--registry", "vigie", "zebra"], work);
      ok(zebra);
      expect(zebra.stdout).toMatch(/^b = "0\.1\.0" +# Builds on a with a zebra multiplier$/m);
      expect(zebra.stdout).not.toMatch(/^a = /m);

      const quoted = await run(["search", "--registry", "vigie", "arithmetic helpers"], work);
      ok(quoted);
      expect(quoted.stdout).toMatch(/^a = "0\.2\.0" +# Arithmetic helpers of the vigie end-to-end test$/m);

      const keyword = await run(["search", "--registry", "vigie", "--limit", "1", "vigie-e2e"], work);
      ok(keyword);
      expect(keyword.stdout).toMatch(/^a = "0\.2\.0"/m);
      expect(keyword.stdout).toMatch(/and 1 crates? more/);

      const nothing = await run(["search", "--registry", "vigie", "unheardof"], work);
      ok(nothing);
      expect(nothing.stdout).not.toMatch(/ = "/);

      const answer = await api(vigie, "GET", "/api/v1/crates?q=vigie-e2e&per_page=1");
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json()).toEqual({
        crates: [{ name: "a", max_version: "0.2.0", description: "Arithmetic helpers of the vigie end-to-end test" }],
        meta: { total: 2 },
      });

      // Several words as several arguments: Cargo joins them with "+" (q=arithmetic%2Bhelpers).
      const arithmetic = await run(["search", "--registry", "vigie", "arithmetic", "helpers"], work);
      ok(arithmetic);
      expect(arithmetic.stdout).toMatch(/^a = "0\.2\.0" +# Arithmetic helpers of the vigie end-to-end test$/m);
    },
    CARGO_TIMEOUT,
  );

  it(
    "owners: add, list, a non-owner's publish refused, two owners racing for one version, remove",
    async () => {
      const added = await run(["owner", "--registry", "vigie", "--add", BOB.name, "a"], work);
      ok(added);
      expect(added.stderr).toContain(SAYS.ownerAdded(BOB.name, "a"));
      const listed = await run(["owner", "--registry", "vigie", "--list", "a"], work);
      ok(listed);
      expect(listed.stdout).toMatch(/^root\b/m);
      expect(listed.stdout).toMatch(new RegExp(`^bob \\(${BOB.description}\\)$`, "m"));
      const owners = await api(vigie, "GET", "/api/v1/crates/a/owners");
      expect(owners.status, owners.text).toBe(200);
      const users = owners.json().users as Array<{ id: number; login: string; name: string }>;
      expect(users.map((user) => user.login).sort()).toEqual(["bob", "root"]);
      for (const user of users) {
        expect(Number.isInteger(user.id) && user.id > 0 && user.id < 2 ** 32, JSON.stringify(user)).toBe(true);
      }
      expect(users.find((user) => user.login === "bob")?.name).toBe(BOB.description);
      expect((await crateView(vigie, root, "a")).owners.map((owner) => owner.name).sort()).toEqual(["bob", "root"]);

      // bob owns a, not b: a new version of b is refused with the server's sentence.
      const notOwner = await publish(
        writeCrate(join(work, "b-0.2.0"), {
          name: "b",
          version: "0.2.0",
          description: "Builds on a with a zebra multiplier",
          publish: ["vigie"],
          lib: "pub fn compute() -> u32 {\n    0\n}\n",
        }),
        bob,
      );
      failed(notOwner);
      expect(notOwner.stderr).toContain("403");
      expect(notOwner.stderr).toContain(SAYS.notOwner("b"));

      // Both owners publish a 0.3.0 at the same moment, each with its own Cargo home: Cargo finds
      // no 0.3.0 in the index for either (it looks before packaging, and the build script of the
      // verification holds both uploads back for a second), so both upload; exactly one wins, the
      // other gets the server's 409.
      const bobCargo = new CargoHome(join(work, "cargo-bob"), { vigie: vigie.baseUrl });
      const racer = { ...libA("0.3.0", 3), build: SLOW_BUILD };
      const [first, second] = await Promise.all([
        publish(writeCrate(join(work, "a-0.3.0-root"), racer), root),
        publish(writeCrate(join(work, "a-0.3.0-bob"), racer), bob, bobCargo),
      ]);
      expect([first.code, second.code].sort(), `${outputOf(first)}\n${outputOf(second)}`).toEqual([0, 101]);
      const loser = first.code === 0 ? second : first;
      expect(loser.stderr, outputOf(loser)).toContain("409");
      expect(loser.stderr).toMatch(SAYS.raced("a", "0.3.0"));
      const view = await crateView(vigie, root, "a");
      expect(view.versions.map((entry) => entry.version)).toEqual(["0.1.0", "0.2.0", "0.3.0"]);

      const removed = await run(["owner", "--registry", "vigie", "--remove", BOB.name, "a"], work);
      ok(removed);
      const after = await run(["owner", "--registry", "vigie", "--list", "a"], work);
      ok(after);
      expect(after.stdout).toMatch(/^root\b/m);
      expect(after.stdout).not.toMatch(/^bob\b/m);
      const last = await run(["owner", "--registry", "vigie", "--remove", "root", "a"], work);
      failed(last);
      expect(last.stderr).toContain(SAYS.lastOwner("a"));
      // bob, no longer an owner, may not yank.
      const bobYank = await run(["yank", "--registry", "vigie", "--version", "0.3.0", "a"], work, bob);
      failed(bobYank);
      expect(bobYank.stderr).toContain("403");
    },
    CARGO_TIMEOUT,
  );

  it(
    "refuses a version published twice: Cargo sees it in the index, the server answers 409",
    async () => {
      const again = await publish(join(work, "a-0.1.0"));
      failed(again);
      expect(again.stderr).toMatch(/a@0\.1\.0 already exists/);

      // Past Cargo's own check (build metadata does not make another version), the server's 409.
      const crate = await validCrate("a", "0.1.0+again");
      const answer = await putCrate(vigie.baseUrl, root, publishBody(metadataOf("a", "0.1.0+again"), crate));
      expect(answer).toEqual({ status: 409, body: { errors: [{ detail: SAYS.exists("a", "0.1.0") }] } });
      const short = await putCrate(vigie.baseUrl, root, Buffer.from([1, 0]));
      expect(short.status).toBe(400);
      expect(short.body).toEqual({ errors: [{ detail: expect.any(String) }] });
    },
    CARGO_TIMEOUT,
  );

  it(
    "token scopes: publish-update alone cannot publish a new crate, crates a* cannot yank b",
    async () => {
      const updateOnly = await tokenOf(vigie, ROOT, "update only", { scopes: ["publish-update"] });
      const newCrate = await publish(
        writeCrate(join(work, "c"), {
          name: "c",
          version: "0.1.0",
          description: "A crate the token may not create",
          publish: ["vigie"],
          lib: "",
        }),
        updateOnly,
      );
      failed(newCrate);
      expect(newCrate.stderr).toContain("403");
      expect(newCrate.stderr).toContain(SAYS.lacksScope("publish-new"));
      expect((await api(vigie, "GET", "/api/v1/cargo/index/1/c")).status).toBe(404);

      const onlyA = await tokenOf(vigie, ROOT, "only a", { crates: ["a*"] });
      const yankB = await run(["yank", "--registry", "vigie", "--version", "0.1.0", "b"], work, onlyA);
      failed(yankB);
      expect(yankB.stderr).toContain("403");
      expect(yankB.stderr).toContain(SAYS.notForCrate("b", "a*"));
      ok(await run(["yank", "--registry", "vigie", "--version", "0.3.0", "a"], work, onlyA));
      ok(await run(["yank", "--registry", "vigie", "--undo", "--version", "0.3.0", "a"], work, onlyA));
      expect((await crateView(vigie, root, "b")).versions.map((entry) => entry.yanked)).toEqual([false]);

      // A scoped token is for Cargo only: the user API refuses it.
      const users = await api(vigie, "GET", "/api/v1/registry/user", { token: onlyA });
      expect({ status: users.status, body: users.json() }).toEqual({
        status: 403,
        body: { error: SAYS.scopedElsewhere },
      });
    },
    CARGO_TIMEOUT,
  );

  it(
    "with auth-required, Cargo needs a token for the index and downloads, and builds with one",
    async () => {
      privateVigie = await startRegistry(true);
      const server = privateVigie;
      const token = await tokenOf(server, ROOT, "cargo");
      const privateCargo = new CargoHome(join(work, "cargo-private"), { private: server.baseUrl });

      const refused = await api(server, "GET", "/api/v1/cargo/index/config.json");
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe(`Cargo login_url="${server.baseUrl}/me"`);
      expect(refused.json().error).toContain(SAYS.needsToken);
      const config = await api(server, "GET", "/api/v1/cargo/index/config.json", { token });
      expect(config.status, config.text).toBe(200);
      expect(config.json()).toEqual({
        dl: `${server.baseUrl}/api/v1/crates`,
        api: server.baseUrl,
        "auth-required": true,
      });
      const me = await fetch(`${server.baseUrl}/me`);
      expect(me.status).toBe(200);
      expect(await me.text()).toContain("cargo login --registry");

      const secret = writeCrate(join(work, "secret"), {
        name: "secret",
        version: "1.0.0",
        description: "Kept behind a token",
        publish: ["private"],
        lib: "pub fn value() -> u32 {\n    42\n}\n",
      });
      const published = await privateCargo.run(["publish", "--registry", "private"], {
        cwd: secret,
        tokens: { private: token },
      });
      ok(published);
      const download = await fetch(`${server.baseUrl}/api/v1/crates/secret/1.0.0/download`);
      expect(download.status).toBe(401);
      expect(await download.json()).toEqual({ errors: [{ detail: expect.stringContaining(SAYS.needsToken) }] });

      const app = writeCrate(join(work, "private-app"), {
        name: "vigie-e2e-private-app",
        version: "0.1.0",
        dependencies: { secret: { version: "1", registry: "private" } },
        main: 'fn main() {\n    println!("secret says {}", secret::value());\n}\n',
      });
      // No token: Cargo refuses before sending one (it learnt from the 401 that the index needs one).
      const missing = await privateCargo.run(["build"], { cwd: app });
      failed(missing);
      expect(missing.stderr).toContain("no token found for `private`");
      // A token Vigie does not know: Cargo shows Vigie's answer.
      const wrong = await privateCargo.run(["build"], {
        cwd: app,
        tokens: { private: "vigie_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
      });
      failed(wrong);
      expect(wrong.stderr).toContain("401");
      expect(wrong.stderr).toContain(SAYS.invalidToken);
      const built = await privateCargo.run(["build"], { cwd: app, tokens: { private: token } });
      ok(built);
      expect(built.stderr).toMatch(/Downloaded secret v1\.0\.0 \(registry `private`\)/);
      const ran = await privateCargo.run(["run", "--quiet"], { cwd: app, tokens: { private: token } });
      ok(ran);
      expect(ran.stdout).toBe("secret says 42\n");
      const searched = await privateCargo.run(["search", "--registry", "private", "secret"], {
        cwd: work,
        tokens: { private: token },
      });
      ok(searched);
      expect(searched.stdout).toMatch(/^secret = "1\.0\.0" +# Kept behind a token$/m);
      expect(cachedIndexes(privateCargo).every((name) => name.startsWith("127.0.0.1-"))).toBe(true);
    },
    CARGO_TIMEOUT,
  );

  it("never reached crates.io: Cargo's index cache holds only Vigie's indexes", () => {
    const indexes = cachedIndexes(cargo);
    expect(indexes.length).toBeGreaterThan(0);
    expect(indexes.filter((name) => !name.startsWith("127.0.0.1-"))).toEqual([]);
  });
});
