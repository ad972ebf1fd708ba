/**
 * The Cargo registry through `app.inject()`, on SQLite and on PostgreSQL (docs/cargo.md): the sparse
 * index, publish, yank, owners, search, download, token scopes, browsing and metrics, with the
 * requests the stock cargo sends (no `Content-Type` on a publish, an empty JSON body on a yank, the
 * raw token in `Authorization`).
 */
import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistryModule } from "../../../src/registry/index.js";
import type { VigieServer } from "../../../src/server.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../../support/databases.js";
import { startTestServer } from "../../support/server.js";
import { temporaryDirectory } from "../../support/temporary.js";
import { until } from "../../support/until.js";
import { dropWhenClosed } from "../sessions.js";
import {
  crateOf,
  dependency,
  metadataOf,
  type Publication,
  publication,
  publishBody,
  u32,
  validCrate,
} from "./frames.js";

const PUBLIC_URL = "http://registry.test:8080";
const ROOT_PASSWORD = "root-password-1";
const PASSWORD = "user-password-1";
const MAX_CRATE_SIZE = 64 * 1024;
const WARNINGS = { warnings: { invalid_categories: [], invalid_badges: [], other: [] } };
const CHALLENGE = `Cargo login_url="${PUBLIC_URL}/me"`;
const CRATES_IO = "https://github.com/rust-lang/crates.io-index";

/** An answer: status, JSON body (or the text), raw bytes, headers. */
interface Reply {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  readonly body: any;
  readonly text: string;
  readonly raw: Buffer;
  readonly headers: Record<string, string | string[] | number | undefined>;
}

/** One request: a raw token as cargo sends it, a JSON or binary body, more headers. */
interface Request {
  readonly token?: string;
  /** An object is sent as JSON (`Content-Type: application/json`); bytes without `Content-Type`. */
  readonly body?: Buffer | Record<string, unknown>;
  readonly headers?: Record<string, string>;
}

async function call(
  app: FastifyInstance,
  method: "GET" | "PUT" | "DELETE" | "POST",
  url: string,
  request: Request = {},
) {
  const headers: Record<string, string> = { ...request.headers };
  if (request.token !== undefined) headers.authorization = request.token;
  let payload: Buffer | string | undefined;
  if (Buffer.isBuffer(request.body)) payload = request.body;
  else if (request.body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(request.body);
  }
  const response = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  let body: unknown = response.body;
  try {
    body = JSON.parse(response.body);
  } catch {
    // not JSON: the text
  }
  const reply: Reply = {
    status: response.statusCode,
    body,
    text: response.body,
    raw: response.rawPayload,
    headers: response.headers,
  };
  return reply;
}

/** Expects Cargo's error format (docs/cargo.md) with `status` and a detail matching `detail`. */
function expectCargoError(reply: Reply, status: number, detail: RegExp | string): void {
  expect({ status: reply.status, body: reply.body }).toEqual({
    status,
    body: { errors: [{ detail: typeof detail === "string" ? detail : expect.stringMatching(detail) }] },
  });
}

/** Expects Vigie's error format with `status`. */
function expectVigieError(reply: Reply, status: number, error: RegExp | string): void {
  expect({ status: reply.status, body: reply.body }).toEqual({
    status,
    body: { error: typeof error === "string" ? error : expect.stringMatching(error) },
  });
}

/** The sparse index path of a crate name (Cargo's layout). */
function indexPath(name: string): string {
  const lower = name.toLowerCase();
  if (lower.length === 1) return `1/${lower}`;
  if (lower.length === 2) return `2/${lower}`;
  if (lower.length === 3) return `3/${lower[0]}/${lower}`;
  return `${lower.slice(0, 2)}/${lower.slice(2, 4)}/${lower}`;
}

/** Every file under a directory, relative paths, sorted. */
async function filesUnder(directory: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (relative: string) => {
    let entries: Dirent[];
    try {
      entries = await readdir(join(directory, relative), { withFileTypes: true });
    } catch (error) {
      if (error instanceof Error && "code" in error && error.code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) {
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) await walk(path);
      else found.push(path);
    }
  };
  await walk("");
  return found.sort();
}

/** The value of a metric sample line `<name> <value>` (labels included in `name`), NaN when absent. */
function sample(text: string, name: string): number {
  const escaped = name.replace(/[{}"\\]/g, (character) => `\\${character}`);
  const match = new RegExp(`^${escaped} (\\d+(?:\\.\\d+)?)$`, "m").exec(text);
  return Number(match?.[1] ?? Number.NaN);
}

describe.each(DATABASE_KINDS)("Cargo registry API on $kind", ({ kind, skip }) => {
  describe.skipIf(skip)("", () => {
    let testDatabase: TestDatabase;
    let server: VigieServer;
    let app: FastifyInstance;
    let storage: string;
    let root: string;
    let alice: string;
    let bob: string;
    let carol: string;

    const config = (
      authRequired: boolean,
      maxCrateSize: number | string = MAX_CRATE_SIZE,
      cargo: Record<string, unknown> = {},
    ) => ({
      database: { url: testDatabase.url },
      // Far below max-crate-size: a publish's limit is max-crate-size plus 1 MiB of metadata, not this.
      http: { "public-url": PUBLIC_URL, "body-limit": "16KiB" },
      registry: {
        enabled: true,
        cargo: { enabled: true, "auth-required": authRequired, "max-crate-size": maxCrateSize, storage, ...cargo },
      },
    });
    const start = (authRequired: boolean, cargo: Record<string, unknown> = {}) =>
      startTestServer({
        modules: [
          createRegistryModule({ environment: { VIGIE_ADMIN_NAME: "root", VIGIE_ADMIN_PASSWORD: ROOT_PASSWORD } }),
        ],
        config: config(authRequired, MAX_CRATE_SIZE, cargo),
      });

    /** A token of `user` through the registry API, with optional Cargo scopes. */
    const token = async (user: string, password: string, limits: { scopes?: string[]; crates?: string[] } = {}) => {
      const name = `t-${Math.random().toString(36).slice(2, 10)}`;
      const answer = await call(app, "POST", "/api/v1/registry/token", { body: { name, user, password, ...limits } });
      expect(answer.status, answer.text).toBe(201);
      return answer.body.token as string;
    };
    const user = async (name: string, description: string) => {
      const answer = await call(app, "POST", "/api/v1/registry/user", {
        headers: { authorization: `Bearer ${root}` },
        body: { name, password: PASSWORD, description, role: "tech", active: true },
      });
      expect(answer.status, answer.text).toBe(201);
      return token(name, PASSWORD);
    };

    const get = (url: string, request: Request = {}) => call(app, "GET", url, request);
    const publish = (as: string | undefined, what: Publication | Buffer, on: FastifyInstance = app) =>
      call(on, "PUT", "/api/v1/crates/new", {
        ...(as === undefined ? {} : { token: as }),
        body: Buffer.isBuffer(what) ? what : what.body,
      });
    /** Publishes a valid version and expects 200. */
    const published = async (as: string, name: string, vers: string, fields: Record<string, unknown> = {}) => {
      const made = await publication(name, vers, fields);
      const answer = await publish(as, made);
      expect(answer.status, answer.text).toBe(200);
      return made;
    };
    const yank = (as: string | undefined, name: string, vers: string, undo = false) =>
      call(app, undo ? "PUT" : "DELETE", `/api/v1/crates/${name}/${vers}/${undo ? "unyank" : "yank"}`, {
        ...(as === undefined ? {} : { token: as }),
        // What cargo sends: a JSON content type and no body.
        headers: { "content-type": "application/json" },
        body: Buffer.alloc(0),
      });
    const indexLines = async (name: string) => {
      const answer = await get(`/api/v1/cargo/index/${indexPath(name)}`);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text.endsWith("\n")).toBe(true);
      // biome-ignore lint/suspicious/noExplicitAny: index lines are JSON
      const lines: any[] = answer.text
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      return lines;
    };
    const browse = (name: string) => get(`/api/v1/registry/crates/${name}`);
    const metrics = async () => (await get("/metrics")).text;

    beforeAll(async () => {
      testDatabase = await createTestDatabase(kind);
      storage = join(temporaryDirectory("vigie-crates-"), "crates");
      server = await start(false);
      app = server.app;
      root = await token("root", ROOT_PASSWORD);
      alice = await user("alice", "Alice Liddell");
      bob = await user("bob", "Bob");
      carol = await user("carol", "Carol");
    });

    afterAll(async () => {
      await server?.close();
      await dropWhenClosed(testDatabase);
    });

    describe("index", () => {
      it("serves config.json with dl and api, without auth-required when not required", async () => {
        const answer = await get("/api/v1/cargo/index/config.json");
        expect(answer.status).toBe(200);
        expect(answer.body).toEqual({ dl: `${PUBLIC_URL}/api/v1/crates`, api: PUBLIC_URL });
      });

      it("puts names of 1, 2, 3 and 4+ characters at Cargo's paths, case-insensitively", async () => {
        for (const name of ["x", "xy", "xyz", "xyzw", "Index_Layout-Name"]) await published(alice, name, "0.1.0");
        const paths: Record<string, string> = {
          x: "1/x",
          xy: "2/xy",
          xyz: "3/x/xyz",
          xyzw: "xy/zw/xyzw",
          Index_Layout: "in/de/index_layout-name",
        };
        for (const [name, path] of Object.entries(paths)) {
          const answer = await get(`/api/v1/cargo/index/${path}`);
          expect(answer.status, `${name}: ${answer.text}`).toBe(200);
          expect(JSON.parse(answer.text.trimEnd()).vers).toBe("0.1.0");
        }
        const upper = await get("/api/v1/cargo/index/IN/DE/Index_Layout-NAME");
        expect(upper.status, upper.text).toBe(200);
        expect(JSON.parse(upper.text.trimEnd()).name).toBe("Index_Layout-Name");
        expect((await get("/api/v1/cargo/index/3/X/XYZ")).status).toBe(200);
        expect((await get("/api/v1/cargo/index/2/XY")).status).toBe(200);
        for (const path of ["1/q", "3/y/xyz", "xy/zw", "zz/zw/xyzw", "2/xyz", "4/xyzw", "nothing"]) {
          const answer = await get(`/api/v1/cargo/index/${path}`);
          expect(answer.status, path).toBe(404);
          expect(answer.body, path).toEqual({ error: expect.any(String) });
        }
      });

      it("writes one index format v2 line per version in publication order", async () => {
        const first = await published(alice, "lines", "0.2.0", {
          deps: [
            dependency("x", "^0.1"),
            dependency("xy", ">=0.1, <0.3", { kind: "dev", features: ["std"], default_features: false }),
            dependency("xyz", "0.1", { kind: "build", target: "cfg(unix)", optional: true }),
            dependency("serde", "^1.0", { registry: CRATES_IO }),
            dependency("xyzw", "0.1.0", { explicit_name_in_toml: "renamed" }),
          ],
          features: { default: ["std"], std: [], extra: ["dep:xyz", "xy?/std"] },
          links: "z",
        });
        const second = await published(alice, "lines", "0.1.0", { rust_version: "1.70" });
        const third = await published(alice, "lines", "0.10.0");
        const lines = await indexLines("lines");
        expect(lines.map((line) => line.vers)).toEqual(["0.2.0", "0.1.0", "0.10.0"]);
        expect(lines[0]).toEqual({
          name: "lines",
          vers: "0.2.0",
          deps: [
            {
              name: "x",
              req: "^0.1",
              features: [],
              optional: false,
              default_features: true,
              target: null,
              kind: "normal",
            },
            {
              name: "xy",
              req: ">=0.1, <0.3",
              features: ["std"],
              optional: false,
              default_features: false,
              target: null,
              kind: "dev",
            },
            {
              name: "xyz",
              req: "0.1",
              features: [],
              optional: true,
              default_features: true,
              target: "cfg(unix)",
              kind: "build",
            },
            {
              name: "serde",
              req: "^1.0",
              features: [],
              optional: false,
              default_features: true,
              target: null,
              kind: "normal",
              registry: CRATES_IO,
            },
            {
              name: "renamed",
              req: "0.1.0",
              features: [],
              optional: false,
              default_features: true,
              target: null,
              kind: "normal",
              package: "xyzw",
            },
          ],
          cksum: first.cksum,
          features: { default: ["std"], std: [], extra: ["dep:xyz", "xy?/std"] },
          yanked: false,
          links: "z",
          v: 2,
        });
        expect(lines[0]).not.toHaveProperty("rust_version");
        expect(lines[1]).toEqual({
          name: "lines",
          vers: "0.1.0",
          deps: [],
          cksum: second.cksum,
          features: {},
          yanked: false,
          links: null,
          v: 2,
          rust_version: "1.70",
        });
        expect(lines[2]).toMatchObject({ vers: "0.10.0", cksum: third.cksum });
        expect(lines[2]).not.toHaveProperty("rust_version");
        // cargo asks for gzip: the same lines, compressed.
        const zipped = await get(`/api/v1/cargo/index/${indexPath("lines")}`, {
          headers: { "accept-encoding": "deflate, gzip" },
        });
        expect(zipped.status).toBe(200);
        expect(zipped.headers["content-encoding"]).toBe("gzip");
        expect(gunzipSync(zipped.raw).toString()).toBe((await get(`/api/v1/cargo/index/${indexPath("lines")}`)).text);
      });

      it("revalidates with ETag and Last-Modified; a publish or a yank changes the ETag", async () => {
        await published(alice, "etags", "0.1.0");
        const url = `/api/v1/cargo/index/${indexPath("etags")}`;
        const first = await get(url);
        const etag = String(first.headers.etag);
        const lastModified = String(first.headers["last-modified"]);
        expect(etag).toMatch(/^(W\/)?".+"$/);
        expect(Number.isNaN(Date.parse(lastModified))).toBe(false);
        expect(lastModified).toMatch(/GMT$/);

        const byTag = await get(url, { headers: { "if-none-match": etag } });
        expect([byTag.status, byTag.text]).toEqual([304, ""]);
        expect(byTag.headers.etag).toBe(etag);
        const byDate = await get(url, { headers: { "if-modified-since": lastModified } });
        expect([byDate.status, byDate.text]).toEqual([304, ""]);
        const stale = await get(url, { headers: { "if-none-match": '"stale"' } });
        expect(stale.status).toBe(200);
        const old = await get(url, {
          headers: { "if-modified-since": new Date(Date.parse(lastModified) - 60_000).toUTCString() },
        });
        expect(old.status).toBe(200);

        await published(alice, "etags", "0.2.0");
        const afterPublish = await get(url, { headers: { "if-none-match": etag } });
        expect(afterPublish.status).toBe(200);
        expect(afterPublish.headers.etag).not.toBe(etag);
        const etag2 = String(afterPublish.headers.etag);

        expect((await yank(alice, "etags", "0.1.0")).status).toBe(200);
        const afterYank = await get(url, { headers: { "if-none-match": etag2 } });
        expect(afterYank.status).toBe(200);
        expect(afterYank.headers.etag).not.toBe(etag2);
        const etag3 = String(afterYank.headers.etag);

        expect((await yank(alice, "etags", "0.1.0", true)).status).toBe(200);
        const afterUnyank = await get(url, { headers: { "if-none-match": etag3 } });
        expect(afterUnyank.status).toBe(200);
        expect(afterUnyank.headers.etag).not.toBe(etag3);
      });
    });

    describe("publish", () => {
      it("answers the warnings to a body without Content-Type and makes the publisher owner", async () => {
        const made = await publication("first-crate", "0.1.0");
        const response = await app.inject({
          method: "PUT",
          url: "/api/v1/crates/new",
          headers: { authorization: alice },
          payload: made.body,
        });
        expect(response.headers["content-type"]).toMatch(/^application\/json/);
        expect([response.statusCode, response.json()]).toEqual([200, WARNINGS]);
        const owners = await get("/api/v1/crates/first-crate/owners");
        expect(owners.body).toEqual({ users: [{ id: expect.any(Number), login: "alice", name: "Alice Liddell" }] });
        // Another Content-Type is taken as bytes as well.
        const next = await publication("first-crate", "0.2.0");
        const typed = await call(app, "PUT", "/api/v1/crates/new", {
          token: alice,
          body: next.body,
          headers: { "content-type": "application/octet-stream" },
        });
        expect([typed.status, typed.body]).toEqual([200, WARNINGS]);
      });

      it("writes the exact bytes to <storage>/<canonical>/<canonical>-<vers>.crate", async () => {
        const made = await published(alice, "File_Name", "0.1.0");
        expect(await readFile(join(storage, "file-name", "file-name-0.1.0.crate"))).toEqual(made.crate);
        const build = await published(alice, "File_Name", "0.2.0+build.5");
        expect(await readFile(join(storage, "file-name", "file-name-0.2.0+build.5.crate"))).toEqual(build.crate);
        expect(await filesUnder(join(storage, "file-name"))).toEqual([
          "file-name-0.1.0.crate",
          "file-name-0.2.0+build.5.crate",
        ]);
      });

      it("refuses Foo_bar when foo-bar exists", async () => {
        await published(alice, "foo-bar", "0.1.0");
        for (const as of [alice, root]) {
          const answer = await publish(as, await publication("Foo_bar", "0.2.0"));
          expectCargoError(
            answer,
            400,
            "crate Foo_bar would be the same crate as foo-bar (names equal up to case, - and _): publish it as foo-bar",
          );
        }
        expect((await indexLines("foo-bar")).map((line) => line.vers)).toEqual(["0.1.0"]);
        expect(await filesUnder(join(storage, "foo-bar"))).toEqual(["foo-bar-0.1.0.crate"]);
      });

      it("answers 409 to an existing version, whatever its build metadata", async () => {
        const first = await published(alice, "twice", "1.0.0+a");
        const again = await publish(alice, await publication("twice", "1.0.0+a", {}, { "other.txt": "other" }));
        expectCargoError(again, 409, /crate twice version 1\.0\.0 already exists/);
        const other = await publish(alice, await publication("twice", "1.0.0+b"));
        expectCargoError(other, 409, /crate twice version 1\.0\.0 already exists/);
        const plain = await publish(root, await publication("twice", "1.0.0"));
        expectCargoError(plain, 409, /already exists/);
        const lines = await indexLines("twice");
        expect(lines.map((line) => [line.vers, line.cksum])).toEqual([["1.0.0+a", first.cksum]]);
        expect(await filesUnder(join(storage, "twice"))).toEqual(["twice-1.0.0+a.crate"]);
        expect(await readFile(join(storage, "twice", "twice-1.0.0+a.crate"))).toEqual(first.crate);
      });

      it("refuses a tech user who does not own the crate (403); an admin may publish to any crate", async () => {
        await published(alice, "owned", "0.1.0");
        const answer = await publish(bob, await publication("owned", "0.2.0"));
        expectCargoError(answer, 403, /owner of crate owned/);
        expect(await filesUnder(join(storage, "owned"))).toEqual(["owned-0.1.0.crate"]);
        const admin = await publish(root, await publication("owned", "0.3.0"));
        expect([admin.status, admin.body]).toEqual([200, WARNINGS]);
        expect((await indexLines("owned")).map((line) => line.vers)).toEqual(["0.1.0", "0.3.0"]);
      });

      it("refuses bad input in Cargo's format and writes nothing", async () => {
        // An existing crate, so that a refused new version must leave its index untouched too.
        await published(alice, "bad", "0.1.0");
        const etag = (await get(`/api/v1/cargo/index/${indexPath("bad")}`)).headers.etag;
        const listBefore = (await get("/api/v1/registry/crates?per_page=100")).body.total;
        const filesBefore = await filesUnder(storage);

        const good = await validCrate("bad", "0.2.0");
        const goodBody = publishBody(metadataOf("bad", "0.2.0"), good);
        const cases: { what: string; body: Buffer; status: number; detail: RegExp }[] = [
          { what: "an empty body", body: Buffer.alloc(0), status: 400, detail: /publish/ },
          { what: "a truncated frame", body: Buffer.from([1, 0]), status: 400, detail: /too short/ },
          {
            what: "a metadata length past the end",
            body: Buffer.concat([u32(1000), Buffer.from("{}")]),
            status: 400,
            detail: /declares 1000 bytes of metadata/,
          },
          {
            what: "a .crate length past the end",
            body: goodBody.subarray(0, goodBody.length - 10),
            status: 400,
            detail: /declares a \.crate of \d+ bytes/,
          },
          {
            what: "no .crate length",
            body: Buffer.concat([u32(2), Buffer.from("{}")]),
            status: 400,
            detail: /length of the \.crate/,
          },
          {
            what: "bytes after the crate",
            body: Buffer.concat([goodBody, Buffer.from("xx")]),
            status: 400,
            detail: /2 bytes after the \.crate/,
          },
          {
            what: "metadata not JSON",
            body: publishBody('{"name": "bad", "vers": ', good),
            status: 400,
            detail: /not valid JSON/,
          },
          {
            what: "an invalid name",
            body: publishBody(metadataOf("9bad", "0.2.0"), await validCrate("9bad", "0.2.0")),
            status: 400,
            detail: /invalid crate name "9bad"/,
          },
          {
            what: "an invalid name with a dot",
            body: publishBody(metadataOf("ba.d", "0.2.0"), await validCrate("ba.d", "0.2.0")),
            status: 400,
            detail: /invalid crate name "ba\.d"/,
          },
          ...["Con", "nul", "COM1", "lpt9"].map((name) => ({
            what: `the Windows device name ${name}`,
            body: publishBody(metadataOf(name, "0.1.0"), good),
            status: 400,
            detail: new RegExp(`^invalid crate name "${name}": is a Windows device name .*reserved as on crates\\.io$`),
          })),
          {
            what: "the name of one of Rust's own crates",
            body: publishBody(metadataOf("proc-macro", "0.1.0"), good),
            status: 400,
            detail:
              /^invalid crate name "proc-macro": is the name of one of Rust's own crates, reserved as on crates\.io$/,
          },
          {
            what: "301 features, over crates.io's 300",
            body: publishBody(
              metadataOf("bad", "0.2.0", {
                features: Object.fromEntries(Array.from({ length: 301 }, (_, index) => [`f${index}`, []])),
              }),
              good,
            ),
            status: 400,
            detail: /^features has 301 features: at most 300 are allowed \(the registry's max-features\)$/,
          },
          {
            what: "a feature enabling 301 others",
            body: publishBody(
              metadataOf("bad", "0.2.0", {
                features: { all: Array.from({ length: 301 }, (_, index) => `f${index}`) },
              }),
              good,
            ),
            status: 400,
            detail: /^feature all has 301 entries: at most 300 are allowed$/,
          },
          {
            // 100 features of 100 entries of 30 characters: about 330 kB of index line.
            what: "an index line over max-index-line",
            body: publishBody(
              metadataOf("bad", "0.2.0", {
                features: Object.fromEntries(
                  Array.from({ length: 100 }, (_, feature) => [
                    `f${feature}`,
                    Array.from({ length: 100 }, (_, entry) => `e${entry}_${"x".repeat(26)}`),
                  ]),
                ),
              }),
              good,
            ),
            status: 400,
            detail:
              /^the index line of this version would be \d+ bytes: at most 262144 are allowed \(the registry's max-index-line\)/,
          },
          {
            what: "an invalid vers",
            body: publishBody(metadataOf("bad", "0.2"), await validCrate("bad", "0.2")),
            status: 400,
            detail: /invalid version "0\.2"/,
          },
          {
            what: "a dependency from another registry",
            body: publishBody(
              metadataOf("bad", "0.2.0", {
                deps: [dependency("x", "^0.1", { registry: "https://example.com/index" })],
              }),
              good,
            ),
            status: 400,
            detail: /dependency x comes from registry "https:\/\/example\.com\/index"/,
          },
          {
            what: "a .crate that is not gzip",
            body: publishBody(metadataOf("bad", "0.2.0"), Buffer.from("this is not gzip")),
            status: 400,
            detail: /not a gzip file/,
          },
          {
            what: "gzip of a non-tar",
            body: publishBody(metadataOf("bad", "0.2.0"), gzipSync(Buffer.alloc(2048, "x"))),
            status: 400,
            detail: /not a valid tar archive/,
          },
          {
            what: "a tar with ../",
            body: publishBody(
              metadataOf("bad", "0.2.0"),
              await crateOf([
                { name: "bad-0.2.0/Cargo.toml", body: "[package]" },
                { name: "bad-0.2.0/../evil", body: "evil" },
              ]),
            ),
            status: 400,
            detail: /outside bad-0\.2\.0\/: bad-0\.2\.0\/\.\.\/evil/,
          },
          {
            what: "a tar with an entry outside bad-0.2.0/",
            body: publishBody(
              metadataOf("bad", "0.2.0"),
              await crateOf([
                { name: "bad-0.2.0/Cargo.toml", body: "[package]" },
                { name: "other-0.2.0/src/lib.rs", body: "" },
              ]),
            ),
            status: 400,
            detail: /outside bad-0\.2\.0\/: other-0\.2\.0\/src\/lib\.rs/,
          },
          {
            what: "a tar of another version",
            body: publishBody(metadataOf("bad", "0.2.0"), await validCrate("bad", "0.3.0")),
            status: 400,
            detail: /outside bad-0\.2\.0\//,
          },
          {
            what: "no Cargo.toml",
            body: publishBody(
              metadataOf("bad", "0.2.0"),
              await crateOf([{ name: "bad-0.2.0/src/lib.rs", body: "pub fn f() {}" }]),
            ),
            status: 400,
            detail: /does not hold bad-0\.2\.0\/Cargo\.toml/,
          },
          {
            what: "a .crate over max-crate-size",
            body: publishBody(
              metadataOf("bad", "0.2.0"),
              await validCrate("bad", "0.2.0", { "blob.bin": randomBytes(MAX_CRATE_SIZE + 1024) }),
            ),
            status: 413,
            detail: /max-crate-size/,
          },
          {
            what: "a body far over max-crate-size",
            body: publishBody(metadataOf("bad", "0.2.0"), randomBytes(MAX_CRATE_SIZE + 2 * 1024 * 1024)),
            status: 413,
            detail: /max-crate-size/,
          },
        ];
        for (const { what, body, status, detail } of cases) {
          const answer = await publish(alice, body);
          expect({ what, status: answer.status, body: answer.body }).toEqual({
            what,
            status,
            body: { errors: [{ detail: expect.stringMatching(detail) }] },
          });
        }

        const unauthenticated = await publish(undefined, goodBody);
        expectCargoError(unauthenticated, 401, /token/);
        expect(unauthenticated.headers["www-authenticate"]).toBe(CHALLENGE);
        const invalid = await publish(`vigie_${"A".repeat(43)}`, goodBody);
        expectCargoError(invalid, 401, /token/);
        expect(invalid.headers["www-authenticate"]).toBe(CHALLENGE);

        // Nothing written: no row, no file, no temporary file.
        expect((await get(`/api/v1/cargo/index/${indexPath("bad")}`)).headers.etag).toBe(etag);
        expect((await indexLines("bad")).map((line) => line.vers)).toEqual(["0.1.0"]);
        expect((await browse("bad")).body.versions.map((version: { version: string }) => version.version)).toEqual([
          "0.1.0",
        ]);
        for (const name of ["9bad", "ba.d"]) expect((await browse(name)).status).toBe(404);
        expect((await get("/api/v1/registry/crates?per_page=100")).body.total).toBe(listBefore);
        expect(await filesUnder(storage)).toEqual(filesBefore);
        // The same version, done right, is still free.
        const fine = await publish(alice, goodBody);
        expect([fine.status, fine.body]).toEqual([200, WARNINGS]);
      });

      it("lets exactly one of two concurrent publishes of a version through", async () => {
        for (const [index, versions] of [
          ["0.1.0", "0.1.0"],
          ["0.2.0+a", "0.2.0+b"],
        ].entries()) {
          const made = await Promise.all(
            versions.map((vers, side) => publication("concurrent", vers, {}, { "side.txt": `${side}` })),
          );
          const answers = await Promise.all(made.map((one) => publish(alice, one)));
          expect(answers.map((answer) => answer.status).sort(), answers.map((a) => a.text).join(" | ")).toEqual([
            200, 409,
          ]);
          const winner = answers[0]?.status === 200 ? 0 : 1;
          const loser = answers[1 - winner] as Reply;
          expectCargoError(loser, 409, /concurrent/);
          const lines = await indexLines("concurrent");
          expect(lines).toHaveLength(index + 1);
          expect(lines.at(-1)).toMatchObject({ vers: versions[winner], cksum: made[winner]?.cksum });
          const file = await readFile(join(storage, "concurrent", `concurrent-${versions[winner]}.crate`));
          expect(file).toEqual(made[winner]?.crate);
        }
        expect(await filesUnder(join(storage, "concurrent"))).toHaveLength(2);
      });

      it("refuses the token of an inactive user", async () => {
        const dave = await user("dave", "Dave");
        const off = await call(app, "POST", "/api/v1/registry/user/dave", {
          headers: { authorization: `Bearer ${root}` },
          body: { active: false },
        });
        expect(off.status, off.text).toBe(200);
        expectCargoError(await publish(dave, await publication("inactive-crate", "0.1.0")), 403, /not active/);
        expect((await get(`/api/v1/cargo/index/${indexPath("inactive-crate")}`)).status).toBe(404);
      });

      it("answers unknown routes under /api/v1/crates in Cargo's format", async () => {
        expectCargoError(await get("/api/v1/crates/a/b/c/d"), 404, /not found/);
      });

      it("takes bodies up to max-crate-size plus 1 MiB of metadata, whatever http.body-limit", async () => {
        const crate = await validCrate("roomy", "0.1.0", { "blob.bin": randomBytes(MAX_CRATE_SIZE - 4096) });
        expect(crate.length).toBeGreaterThan(32 * 1024);
        expect(crate.length).toBeLessThanOrEqual(MAX_CRATE_SIZE);
        const answer = await publish(alice, publishBody(metadataOf("roomy", "0.1.0"), crate));
        expect([answer.status, answer.body]).toEqual([200, WARNINGS]);
        const readme = `# Roomy\n${"x".repeat(512 * 1024)}\n`;
        const long = await publish(alice, await publication("roomy", "0.2.0", { readme }));
        expect([long.status, long.body]).toEqual([200, WARNINGS]);
        expect((await browse("roomy")).body.versions[1].readme).toBe(readme);
      });

      it("refuses a new crate with bad input without creating it", async () => {
        const filesBefore = await filesUnder(storage);
        const noManifest = publishBody(
          metadataOf("never", "0.1.0"),
          await crateOf([{ name: "never-0.1.0/src/lib.rs", body: "" }]),
        );
        expectCargoError(await publish(alice, noManifest), 400, /Cargo\.toml/);
        const notGzip = publishBody(metadataOf("never", "0.1.0"), Buffer.from("nope"));
        expectCargoError(await publish(alice, notGzip), 400, /gzip/);
        expect((await get(`/api/v1/cargo/index/${indexPath("never")}`)).status).toBe(404);
        expectVigieError(await browse("never"), 404, /never/);
        expect(await filesUnder(storage)).toEqual(filesBefore);
        // No crate, so no owner claimed: bob may create it.
        await published(bob, "never", "0.1.0");
        expect((await get("/api/v1/crates/never/owners")).body.users.map((u: { login: string }) => u.login)).toEqual([
          "bob",
        ]);
      });
    });

    describe("yank and unyank", () => {
      it("lets an owner yank and unyank, with the flag in the index and the browse API", async () => {
        await published(alice, "yankee", "0.1.0");
        await published(alice, "yankee", "0.2.0");
        const yanked = await yank(alice, "yankee", "0.1.0");
        expect([yanked.status, yanked.body]).toEqual([200, { ok: true }]);
        expect((await indexLines("yankee")).map((line) => [line.vers, line.yanked])).toEqual([
          ["0.1.0", true],
          ["0.2.0", false],
        ]);
        const browsed = await browse("yankee");
        expect(browsed.body.versions.map((v: { version: string; yanked: boolean }) => [v.version, v.yanked])).toEqual([
          ["0.1.0", true],
          ["0.2.0", false],
        ]);
        // Twice is fine.
        expect((await yank(alice, "yankee", "0.1.0")).body).toEqual({ ok: true });
        const unyanked = await yank(alice, "yankee", "0.1.0", true);
        expect([unyanked.status, unyanked.body]).toEqual([200, { ok: true }]);
        expect((await indexLines("yankee")).map((line) => line.yanked)).toEqual([false, false]);
        expect((await browse("yankee")).body.versions[0].yanked).toBe(false);
        // An admin may yank any crate.
        expect((await yank(root, "yankee", "0.2.0")).body).toEqual({ ok: true });
        expect((await yank(root, "yankee", "0.2.0", true)).body).toEqual({ ok: true });
      });

      it("answers 404 to an unknown version or crate, 403 to a non-owner, 401 without a token", async () => {
        await published(alice, "yank-errors", "0.1.0");
        expectCargoError(await yank(alice, "yank-errors", "0.9.0"), 404, /0\.9\.0/);
        expectCargoError(await yank(alice, "yank-errors", "0.9.0", true), 404, /0\.9\.0/);
        expectCargoError(await yank(alice, "yank-errors", "not-a-version"), 404, /not-a-version/);
        expectCargoError(await yank(alice, "no-such-crate", "0.1.0"), 404, /no-such-crate/);
        expectCargoError(await yank(alice, "no-such-crate", "0.1.0", true), 404, /no-such-crate/);
        expectCargoError(await yank(bob, "yank-errors", "0.1.0"), 403, /owner of crate yank-errors/);
        expectCargoError(await yank(bob, "yank-errors", "0.1.0", true), 403, /owner of crate yank-errors/);
        const anonymous = await yank(undefined, "yank-errors", "0.1.0");
        expectCargoError(anonymous, 401, /token/);
        expect((await indexLines("yank-errors"))[0].yanked).toBe(false);
      });
    });

    describe("owners", () => {
      it("lists, adds and removes owners; the last one stays", async () => {
        await published(alice, "shared", "0.1.0");
        const url = "/api/v1/crates/shared/owners";
        const first = await get(url);
        expect(first.status).toBe(200);
        expect(first.body).toEqual({ users: [{ id: expect.any(Number), login: "alice", name: "Alice Liddell" }] });
        const aliceId: number = first.body.users[0].id;
        expect(Number.isInteger(aliceId) && aliceId > 0 && aliceId <= 0xffffffff).toBe(true);
        expect((await get(url)).body.users[0].id).toBe(aliceId);

        const added = await call(app, "PUT", url, { token: alice, body: { users: ["bob"] } });
        expect([added.status, added.body]).toEqual([
          200,
          { ok: true, msg: "user bob has been added as an owner of crate shared" },
        ]);
        const both = (await get(url)).body.users as { id: number; login: string; name: string }[];
        expect(both.map((owner) => owner.login).sort()).toEqual(["alice", "bob"]);
        const bobId = both.find((owner) => owner.login === "bob")?.id as number;
        expect(both.find((owner) => owner.login === "alice")?.id).toBe(aliceId);
        expect(Number.isInteger(bobId) && bobId > 0 && bobId <= 0xffffffff && bobId !== aliceId).toBe(true);
        // The id of a user is the same on every crate.
        await published(bob, "shared-other", "0.1.0");
        expect((await get("/api/v1/crates/shared-other/owners")).body.users).toEqual([
          { id: bobId, login: "bob", name: "Bob" },
        ]);
        // bob may now publish.
        await published(bob, "shared", "0.2.0");

        expectCargoError(await call(app, "PUT", url, { token: alice, body: { users: ["nobody"] } }), 404, /nobody/);
        expectCargoError(await call(app, "PUT", url, { token: carol, body: { users: ["carol"] } }), 403, /owner/);
        expectCargoError(await call(app, "DELETE", url, { token: carol, body: { users: ["alice"] } }), 403, /owner/);
        expectCargoError(await call(app, "PUT", url, { body: { users: ["carol"] } }), 401, /token/);

        const removed = await call(app, "DELETE", url, { token: alice, body: { users: ["bob"] } });
        expect(removed.status, removed.text).toBe(200);
        expect(removed.body).toEqual({ ok: true, msg: expect.stringMatching(/bob/) });
        expect((await get(url)).body.users).toEqual([{ id: aliceId, login: "alice", name: "Alice Liddell" }]);
        expectCargoError(await publish(bob, await publication("shared", "0.3.0")), 403, /owner/);
        expectCargoError(await call(app, "DELETE", url, { token: bob, body: { users: ["alice"] } }), 403, /owner/);

        const last = await call(app, "DELETE", url, { token: alice, body: { users: ["alice"] } });
        expectCargoError(last, 409, /owner/);
        expect((await get(url)).body.users).toEqual([{ id: aliceId, login: "alice", name: "Alice Liddell" }]);
        // An admin may change the owners of any crate.
        const byAdmin = await call(app, "PUT", url, { token: root, body: { users: ["carol"] } });
        expect(byAdmin.body).toEqual({ ok: true, msg: "user carol has been added as an owner of crate shared" });

        expectCargoError(await get("/api/v1/crates/no-such-crate/owners"), 404, /no-such-crate/);
        expectCargoError(await call(app, "PUT", url, { token: alice, body: { nobody: 1 } }), 400, /users/);
      });
    });

    describe("search", () => {
      it("matches words in names, descriptions and keywords, with the highest non-yanked version", async () => {
        await published(alice, "srch-alpha", "0.9.0", {
          description: "A fast parser for widgets",
          keywords: ["parsing"],
        });
        await published(alice, "srch-alpha", "0.10.0", {
          description: "A fast parser for widgets",
          keywords: ["parsing"],
        });
        await published(alice, "srch-alpha", "0.11.0", {
          description: "A fast parser for widgets",
          keywords: ["parsing"],
        });
        expect((await yank(alice, "srch-alpha", "0.11.0")).status).toBe(200);
        await published(alice, "srch-beta", "1.0.0", { description: "Unrelated words", keywords: ["gizmo"] });
        await published(alice, "srch-gamma-gizmo", "0.1.0", { description: "Something else" });

        const byDescription = await get("/api/v1/crates?q=widgets");
        expect(byDescription.status).toBe(200);
        expect(byDescription.body).toEqual({
          crates: [{ name: "srch-alpha", max_version: "0.10.0", description: "A fast parser for widgets" }],
          meta: { total: 1 },
        });
        const byKeyword = await get("/api/v1/crates?q=gizmo");
        expect(byKeyword.body.crates.map((crate: { name: string }) => crate.name).sort()).toEqual([
          "srch-beta",
          "srch-gamma-gizmo",
        ]);
        expect(byKeyword.body.meta.total).toBe(2);
        const byName = await get("/api/v1/crates?q=srch-gamma");
        expect(byName.body.crates).toEqual([
          { name: "srch-gamma-gizmo", max_version: "0.1.0", description: "Something else" },
        ]);
        const twoWords = await get("/api/v1/crates?q=fast+parser");
        expect(twoWords.body.crates.map((crate: { name: string }) => crate.name)).toContain("srch-alpha");
        const caseless = await get("/api/v1/crates?q=WIDGETS");
        expect(caseless.body.crates.map((crate: { name: string }) => crate.name)).toEqual(["srch-alpha"]);
        expect((await get("/api/v1/crates?q=zzznothingzzz")).body).toEqual({ crates: [], meta: { total: 0 } });
        // "_" is taken literally, not as LIKE's any-character.
        const underscore = await get("/api/v1/crates?q=_&per_page=100");
        for (const crate of underscore.body.crates as { name: string; description: string }[]) {
          expect(`${crate.name} ${crate.description}`).toContain("_");
        }
        // Words are matched in the keywords themselves, not in the text they are stored as: no crate
        // here has "[]", a quote, "%" or "," in its description or a keyword, nor in its name.
        const strays: Record<string, string[]> = {};
        for (const word of ["[]", '"parsing"', "%", ","]) {
          const answer = await get(`/api/v1/crates?q=${encodeURIComponent(word)}&per_page=100`);
          expect(answer.status).toBe(200);
          strays[word] = answer.body.crates.map((crate: { name: string }) => crate.name);
        }
        expect(strays).toEqual({ "[]": [], '"parsing"': [], "%": [], ",": [] });
      });

      it("pages with per_page 1–100 (default 10), meta.total counting all matches", async () => {
        for (let index = 0; index < 12; index += 1) {
          await published(alice, `pagetest-${String(index).padStart(2, "0")}`, "0.1.0");
        }
        const byDefault = await get("/api/v1/crates?q=pagetest");
        expect(byDefault.body.crates).toHaveLength(10);
        expect(byDefault.body.meta.total).toBe(12);
        const five = await get("/api/v1/crates?q=pagetest&per_page=5");
        expect(five.body.crates).toHaveLength(5);
        expect(five.body.meta.total).toBe(12);
        expect((await get("/api/v1/crates?q=pagetest&per_page=1")).body.crates).toHaveLength(1);
        expect((await get("/api/v1/crates?q=pagetest&per_page=100")).body.crates).toHaveLength(12);
        for (const perPage of ["0", "101", "-1", "abc", "1.5"]) {
          expectCargoError(await get(`/api/v1/crates?q=pagetest&per_page=${perPage}`), 400, /per_page/);
        }
      });
    });

    describe("download", () => {
      it("serves the published bytes as application/gzip and counts downloads", async () => {
        const made = await published(alice, "dl", "0.1.0");
        const build = await published(alice, "dl", "0.2.0+meta");
        const answer = await get("/api/v1/crates/dl/0.1.0/download");
        expect(answer.status).toBe(200);
        expect(answer.headers["content-type"]).toBe("application/gzip");
        expect(answer.raw).toEqual(made.crate);
        const second = await get("/api/v1/crates/dl/0.1.0/download");
        expect(second.raw).toEqual(made.crate);
        const withBuild = await get("/api/v1/crates/dl/0.2.0+meta/download");
        expect(withBuild.status).toBe(200);
        expect(withBuild.raw).toEqual(build.crate);
        // A yanked version is still downloaded (Cargo.lock files name it).
        expect((await yank(alice, "dl", "0.1.0")).status).toBe(200);
        expect((await get("/api/v1/crates/dl/0.1.0/download")).raw).toEqual(made.crate);

        // Counts reach the database within a second or so.
        const counts = await until(
          async () => {
            const versions = (await browse("dl")).body.versions as { version: string; downloads: number }[];
            const shown = versions.map((version) => [version.version, version.downloads]);
            return JSON.stringify(shown) ===
              JSON.stringify([
                ["0.1.0", 3],
                ["0.2.0+meta", 1],
              ])
              ? shown
              : undefined;
          },
          "the download counts",
          3_000,
        );
        expect(counts).toEqual([
          ["0.1.0", 3],
          ["0.2.0+meta", 1],
        ]);
        expect((await browse("dl")).body.downloads).toBe(4);
      });

      it("answers 404 to an unknown version or crate", async () => {
        await published(alice, "dl-missing", "0.1.0");
        expectCargoError(await get("/api/v1/crates/dl-missing/0.2.0/download"), 404, /0\.2\.0/);
        expectCargoError(await get("/api/v1/crates/dl-missing/nonsense/download"), 404, /nonsense/);
        expectCargoError(await get("/api/v1/crates/no-such-crate/0.1.0/download"), 404, /no-such-crate/);
      });
    });

    describe("token scopes", () => {
      it("keeps a publish-update token from creating crates, not from new versions", async () => {
        await published(alice, "scoped-existing", "0.1.0");
        const update = await token("alice", PASSWORD, { scopes: ["publish-update"] });
        const listed = await call(app, "GET", "/api/v1/registry/token", {
          headers: { authorization: `Bearer ${alice}` },
        });
        expect(listed.body.tokens).toContainEqual(expect.objectContaining({ scopes: ["publish-update"] }));
        const created = await publish(update, await publication("scoped-new", "0.1.0"));
        expectCargoError(created, 403, /publish-new/);
        expect((await get(`/api/v1/cargo/index/${indexPath("scoped-new")}`)).status).toBe(404);
        const next = await publish(update, await publication("scoped-existing", "0.2.0"));
        expect([next.status, next.body]).toEqual([200, WARNINGS]);
        // Still an owner's rule: bob's crate stays bob's.
        await published(bob, "scoped-bobs", "0.1.0");
        expectCargoError(await publish(update, await publication("scoped-bobs", "0.2.0")), 403, /owner/);
        // Nor may it yank.
        expectCargoError(await yank(update, "scoped-existing", "0.1.0"), 403, /yank/);
        // A scoped token is for Cargo only.
        const admin = await call(app, "GET", "/api/v1/registry/token", {
          headers: { authorization: `Bearer ${update}` },
        });
        expectVigieError(admin, 403, "a token with scopes is for Cargo only");
      });

      it("keeps a token for crates a* off crate b", async () => {
        await published(alice, "aaa-scoped", "0.1.0");
        await published(alice, "bbb-scoped", "0.1.0");
        const onlyA = await token("alice", PASSWORD, { crates: ["a*"] });
        expectCargoError(
          await yank(onlyA, "bbb-scoped", "0.1.0"),
          403,
          "this token is not for crate bbb-scoped (its crates: a*)",
        );
        expect((await indexLines("bbb-scoped"))[0].yanked).toBe(false);
        expect((await yank(onlyA, "aaa-scoped", "0.1.0")).body).toEqual({ ok: true });
        expectCargoError(await publish(onlyA, await publication("bbb-scoped", "0.2.0")), 403, /bbb-scoped/);
        expectCargoError(await publish(onlyA, await publication("bbb-new", "0.1.0")), 403, /bbb-new/);
        const aNew = await publish(onlyA, await publication("aaa-new", "0.1.0"));
        expect([aNew.status, aNew.body]).toEqual([200, WARNINGS]);
        expectCargoError(
          await call(app, "PUT", "/api/v1/crates/bbb-scoped/owners", { token: onlyA, body: { users: ["bob"] } }),
          403,
          /bbb-scoped/,
        );
      });

      it("needs change-owners to change owners", async () => {
        await published(alice, "scoped-owners", "0.1.0");
        const url = "/api/v1/crates/scoped-owners/owners";
        const yankOnly = await token("alice", PASSWORD, { scopes: ["yank", "publish-update"] });
        expectCargoError(
          await call(app, "PUT", url, { token: yankOnly, body: { users: ["bob"] } }),
          403,
          "this token lacks the scope change-owners",
        );
        expectCargoError(
          await call(app, "DELETE", url, { token: yankOnly, body: { users: ["alice"] } }),
          403,
          /change-owners/,
        );
        expect((await yank(yankOnly, "scoped-owners", "0.1.0")).body).toEqual({ ok: true });
        const owners = await token("alice", PASSWORD, { scopes: ["change-owners"] });
        const added = await call(app, "PUT", url, { token: owners, body: { users: ["bob"] } });
        expect([added.status, added.body]).toEqual([
          200,
          { ok: true, msg: "user bob has been added as an owner of crate scoped-owners" },
        ]);
        expectCargoError(await yank(owners, "scoped-owners", "0.1.0", true), 403, "this token lacks the scope yank");
        // Listing owners needs no scope.
        expect((await get(url, { token: yankOnly })).status).toBe(200);
      });
    });

    describe("browsing", () => {
      it("lists crates by name, paged", async () => {
        await published(alice, "zz-browse-b", "0.1.0");
        await published(alice, "ZZ_browse_a", "0.1.0");
        await published(alice, "zz-browse-c", "0.2.0");
        const all = await get("/api/v1/registry/crates?per_page=100");
        expect(all.status).toBe(200);
        const names = (all.body.crates as { name: string }[]).map((crate) => crate.name);
        expect(all.body.total).toBe(names.length);
        const canonical = (name: string) => name.toLowerCase().replaceAll("_", "-");
        expect(names.map(canonical)).toEqual([...names.map(canonical)].sort());
        expect(names.slice(-3)).toEqual(["ZZ_browse_a", "zz-browse-b", "zz-browse-c"]);
        expect(all.body.crates.at(-1)).toMatchObject({ name: "zz-browse-c", "max-version": "0.2.0" });
        // Page by page, the same list.
        const paged: string[] = [];
        for (let page = 1; paged.length < names.length; page += 1) {
          const answer = await get(`/api/v1/registry/crates?per_page=7&page=${page}`);
          expect(answer.status).toBe(200);
          expect(answer.body.total).toBe(names.length);
          expect(answer.body.crates.length).toBeGreaterThan(0);
          paged.push(...answer.body.crates.map((crate: { name: string }) => crate.name));
        }
        expect(paged).toEqual(names);
        expectVigieError(await get("/api/v1/registry/crates?per_page=0"), 400, /per_page/);
        expectVigieError(await get("/api/v1/registry/crates?page=0"), 400, /page/);
      });

      it("shows a crate with its versions, dates, downloads, owners and metadata", async () => {
        const before = Date.now();
        const fields = {
          description: "A crate to browse",
          keywords: ["browse", "test"],
          categories: ["development-tools"],
          license: "MIT OR Apache-2.0",
          repository: "https://example.org/repo",
          documentation: "https://docs.example.org/shown",
          homepage: "https://example.org",
          readme: "# Shown\n",
        };
        const made = await published(alice, "shown", "0.1.0", fields);
        await published(alice, "shown", "0.2.0", { ...fields, description: "Newer" });
        expect((await yank(alice, "shown", "0.2.0")).status).toBe(200);
        const answer = await browse("shown");
        expect(answer.status).toBe(200);
        expect(answer.body).toMatchObject({
          name: "shown",
          owners: [{ name: "alice", description: "Alice Liddell" }],
          versions: [
            { version: "0.1.0", yanked: false, downloads: 0, ...fields },
            { version: "0.2.0", yanked: true, downloads: 0, description: "Newer" },
          ],
        });
        const first = answer.body.versions[0];
        expect(first["published-at"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
        expect(Date.parse(first["published-at"])).toBeGreaterThanOrEqual(before - 1000);
        expect(Date.parse(first["published-at"])).toBeLessThanOrEqual(Date.now() + 1000);
        expect(first.size).toBe(made.crate.length);
        expect(first.checksum).toBe(made.cksum);
        // Any case, - or _.
        expect((await browse("SHOWN")).body.name).toBe("shown");
        expectVigieError(await browse("no-such-crate"), 404, /no-such-crate/);
        expectVigieError(await browse("9-not-a-name"), 404, /9-not-a-name/);
      });

      it("serves GET /me, a page saying how to get a token", async () => {
        const answer = await get("/me");
        expect(answer.status).toBe(200);
        expect(answer.headers["content-type"]).toMatch(/^text\/html/);
        expect(answer.text).toContain("/api/v1/registry/token");
        expect(answer.text).toContain("POST");
        expect(answer.text).toContain("cargo login --registry vigie");
      });
    });

    describe("metrics", () => {
      it("counts crates, versions, downloads and publishes by outcome", async () => {
        const read = async () => {
          const text = await metrics();
          return {
            crates: sample(text, "registry_crates"),
            versions: sample(text, "registry_crate_versions"),
            downloads: sample(text, "registry_downloads_total"),
            ok: sample(text, 'registry_publish_total{outcome="ok"}'),
            invalid: sample(text, 'registry_publish_total{outcome="invalid"}'),
            unauthorized: sample(text, 'registry_publish_total{outcome="unauthorized"}'),
            forbidden: sample(text, 'registry_publish_total{outcome="forbidden"}'),
            conflict: sample(text, 'registry_publish_total{outcome="conflict"}'),
            tooLarge: sample(text, 'registry_publish_total{outcome="too-large"}'),
          };
        };
        const before = await read();
        for (const value of Object.values(before)) expect(Number.isNaN(value)).toBe(false);
        const all = await get("/api/v1/registry/crates?per_page=100");
        expect(before.crates).toBe(all.body.total);

        await published(alice, "metered", "0.1.0");
        await published(alice, "metered", "0.2.0");
        await get("/api/v1/crates/metered/0.1.0/download");
        expectCargoError(await publish(alice, Buffer.from([1])), 400, /short/);
        expectCargoError(await publish(undefined, await publication("metered", "0.3.0")), 401, /token/);
        expectCargoError(await publish(bob, await publication("metered", "0.3.0")), 403, /owner/);
        expectCargoError(await publish(alice, await publication("metered", "0.2.0")), 409, /exists/);
        const big = publishBody(
          metadataOf("metered", "0.3.0"),
          await validCrate("metered", "0.3.0", { "blob.bin": randomBytes(MAX_CRATE_SIZE + 1024) }),
        );
        expectCargoError(await publish(alice, big), 413, /max-crate-size/);
        const huge = publishBody(metadataOf("metered", "0.4.0"), Buffer.alloc(MAX_CRATE_SIZE + 1, 1));
        expectCargoError(await publish(alice, huge), 413, /max-crate-size/);
        // Past max-crate-size plus the metadata's 1 MiB, refused before the body is read: still a publish.
        const past = publishBody(metadataOf("metered", "0.4.0"), Buffer.alloc(MAX_CRATE_SIZE + 2 * 1024 * 1024, 1));
        expectCargoError(await publish(alice, past), 413, /max-crate-size/);

        const after = await read();
        expect(after.crates).toBe(before.crates + 1);
        expect(after.versions).toBe(before.versions + 2);
        expect(after.downloads).toBe(before.downloads + 1);
        expect(after.ok).toBe(before.ok + 2);
        expect(after.invalid).toBe(before.invalid + 1);
        expect(after.unauthorized).toBe(before.unauthorized + 1);
        expect(after.forbidden).toBe(before.forbidden + 1);
        expect(after.conflict).toBe(before.conflict + 1);
        expect(after.tooLarge).toBe(before.tooLarge + 3);
      });
    });

    describe("with a small index cache", () => {
      let small: VigieServer | undefined;

      beforeAll(async () => {
        // A second instance on the same database and storage, keeping at most 4 KiB of index files.
        small = await start(false, { "index-cache-size": "4KiB" });
      });
      afterAll(async () => {
        await small?.close();
      });

      it("keeps at most index-cache-size bytes of rendered index files, and serves every file right", async () => {
        const smallApp = (small as VigieServer).app;
        const cacheBytes = async (on: FastifyInstance) =>
          sample((await call(on, "GET", "/metrics")).text, "registry_index_cache_bytes");
        const names = Array.from({ length: 12 }, (_, index) => `cached-${index}`);
        for (const name of names) {
          for (const vers of ["0.1.0", "0.2.0", "0.3.0"]) await published(alice, name, vers);
        }
        for (let round = 0; round < 2; round += 1) {
          for (const name of names) {
            const plain = await call(smallApp, "GET", `/api/v1/cargo/index/${indexPath(name)}`);
            expect(plain.status).toBe(200);
            expect(plain.text.trimEnd().split("\n")).toHaveLength(3);
            const zipped = await call(smallApp, "GET", `/api/v1/cargo/index/${indexPath(name)}`, {
              headers: { "accept-encoding": "gzip" },
            });
            expect(gunzipSync(zipped.raw).toString()).toBe(plain.text);
            const held = await cacheBytes(smallApp);
            expect(held).toBeGreaterThan(0);
            expect(held).toBeLessThanOrEqual(4096);
          }
        }
        // The first instance, with the default 64 MiB, keeps them all.
        for (const name of names) await get(`/api/v1/cargo/index/${indexPath(name)}`);
        expect(await cacheBytes(app)).toBeGreaterThan(4096);
      });
    });

    describe("with auth-required", () => {
      let closed: VigieServer | undefined;
      let privateApp: FastifyInstance;
      const privateGet = (url: string, request: Request = {}) => call(privateApp, "GET", url, request);

      beforeAll(async () => {
        // A second instance on the same database and storage, answering only with a token.
        closed = await start(true);
        privateApp = closed.app;
      });
      afterAll(async () => {
        await closed?.close();
      });

      it("answers 401 with Cargo's challenge without a token, 200 with one", async () => {
        const made = await published(alice, "private-crate", "0.1.0");
        const config = await privateGet("/api/v1/cargo/index/config.json");
        expect(config.status).toBe(401);
        expect(config.headers["www-authenticate"]).toBe(CHALLENGE);
        const withToken = await privateGet("/api/v1/cargo/index/config.json", { token: carol });
        expect(withToken.status).toBe(200);
        expect(withToken.body).toEqual({
          dl: `${PUBLIC_URL}/api/v1/crates`,
          api: PUBLIC_URL,
          "auth-required": true,
        });

        const indexUrl = `/api/v1/cargo/index/${indexPath("private-crate")}`;
        const index = await privateGet(indexUrl);
        expectVigieError(index, 401, /token/);
        expect(index.headers["www-authenticate"]).toBe(CHALLENGE);
        const invalid = await privateGet(indexUrl, { token: `vigie_${"B".repeat(43)}` });
        expect(invalid.status).toBe(401);
        expect(invalid.headers["www-authenticate"]).toBe(CHALLENGE);
        const line = await privateGet(indexUrl, { token: carol });
        expect(line.status).toBe(200);
        expect(JSON.parse(line.text.trimEnd()).cksum).toBe(made.cksum);

        const downloadUrl = "/api/v1/crates/private-crate/0.1.0/download";
        const download = await privateGet(downloadUrl);
        expectCargoError(download, 401, /token/);
        expect(download.headers["www-authenticate"]).toBe(CHALLENGE);
        const bytes = await privateGet(downloadUrl, { token: carol });
        expect(bytes.status).toBe(200);
        expect(bytes.raw).toEqual(made.crate);

        expectCargoError(await privateGet("/api/v1/crates?q=private"), 401, /token/);
        expect((await privateGet("/api/v1/crates?q=private", { token: carol })).body.crates).toContainEqual(
          expect.objectContaining({ name: "private-crate" }),
        );
        expectCargoError(await privateGet("/api/v1/crates/private-crate/owners"), 401, /token/);
        expect((await privateGet("/api/v1/crates/private-crate/owners", { token: carol })).status).toBe(200);
        expect((await privateGet("/me")).status).toBe(200);
        // Publishing through it works as anywhere.
        const next = await publish(alice, await publication("private-crate", "0.2.0"), privateApp);
        expect([next.status, next.body]).toEqual([200, WARNINGS]);
        expect((await indexLines("private-crate")).map((entry) => entry.vers)).toEqual(["0.1.0", "0.2.0"]);
      });
    });
  });
});
