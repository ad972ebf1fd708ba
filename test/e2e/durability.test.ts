/**
 * Durability (docs/operations.md): a write the API acknowledged survives a `kill -9` of the process
 * right after the response. Each test kills the real server with SIGKILL as soon as the last
 * acknowledgement has arrived, starts it again on the same SQLite file and stream directory, and
 * looks for every write: a write kept only in memory, or answered before it was stored, fails here.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const ADMIN = { name: "root", password: "correct-horse-battery" };
const COMMENTS_ADMIN_TOKEN = "durability-comments-admin-token";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The answer of a math question `what is the result of: a op b`. */
function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

/** What one server needs to be started again on the same state. */
interface Installation {
  readonly directory: string;
  /** The first (and only) stream directory; `:persist true` streams go to its `.vigie-api`. */
  readonly streams: string;
  readonly configFile: string;
  readonly port: number;
  /** A port nothing listens on, for the tcp healthchecks. */
  readonly closedPort: number;
}

/** One acknowledged write, and how to find it again once the server has been restarted. */
interface Written {
  readonly what: string;
  /** Fails (an `expect`) unless the write is there, as it was acknowledged. */
  verify(baseUrl: string): Promise<void>;
}

/** Performs one write through the API and returns once the server acknowledged it (2xx, body read). */
type Writer = (baseUrl: string, installation: Installation, tag: string) => Promise<Written>;

async function send(
  method: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { headers });
  return { status: response.status, body: await response.json() };
}

/** A comment on an auto-approved website: the public list shows it. */
const writeComment: Writer = async (baseUrl, _installation, tag) => {
  const article = `article-${tag}`;
  const challenge = (await get(`${baseUrl}/api/v1/challenge/blog/${article}`)).body as {
    question: string;
    signature: string;
    timestamp: number;
  };
  const content = `kept through kill -9 (${tag})`;
  const posted = await send("POST", `${baseUrl}/api/v1/comment/blog/${article}`, {
    author: "Ann",
    content,
    answer: solve(challenge.question),
    signature: challenge.signature,
    timestamp: challenge.timestamp,
  });
  expect(posted).toEqual({ status: 201, body: { message: "Comment added" } });
  return {
    what: `comment on ${article}`,
    async verify(base) {
      expect(await get(`${base}/api/v1/comment/blog/${article}`)).toEqual({
        status: 200,
        body: [expect.objectContaining({ author: "Ann", content, approved: true })],
      });
      // And through the admin API, with the token of the configuration file.
      const admin = await get(`${base}/api/admin/comment/blog/${article}`, { authorization: COMMENTS_ADMIN_TOKEN });
      expect(admin).toEqual({ status: 200, body: [expect.objectContaining({ content })] });
    },
  };
};

/** A registry token of the bootstrap admin: it must still authenticate after the restart. */
const writeToken: Writer = async (baseUrl, _installation, tag) => {
  const name = `token-${tag}`;
  const created = await send("POST", `${baseUrl}/api/v1/registry/token`, {
    name,
    user: ADMIN.name,
    password: ADMIN.password,
  });
  expect(created).toEqual({ status: 201, body: { token: expect.stringMatching(/^vigie_/) } });
  const { token } = created.body as { token: string };
  return {
    what: `registry token ${name}`,
    async verify(base) {
      const listed = await get(`${base}/api/v1/registry/token`, { authorization: `Bearer ${token}` });
      expect(listed.status).toBe(200);
      const { tokens } = listed.body as { tokens: Array<{ name: string }> };
      expect(tokens.map((entry) => entry.name)).toContain(name);
    },
  };
};

/** A tcp healthcheck created through the API (source `api`). */
const writeHealthcheck: Writer = async (baseUrl, installation, tag) => {
  const definition = {
    name: `check-${tag}`,
    target: "127.0.0.1",
    port: installation.closedPort,
    timeout: "1s",
    // Long enough that the check is not busy running while the test kills the process.
    interval: "1h",
  };
  const added = await send("POST", `${baseUrl}/healthcheck/tcp`, definition);
  expect(added).toEqual({ status: 201, body: { message: "Healthcheck successfully added" } });
  return {
    what: `healthcheck ${definition.name}`,
    async verify(base) {
      expect(await get(`${base}/healthcheck/${definition.name}`)).toEqual({
        status: 200,
        body: expect.objectContaining({ ...definition, kind: "tcp", source: "api" }),
      });
    },
  };
};

/** A stream created with `:persist true`: written to the API streams directory, loaded at start-up. */
const writeStream: Writer = async (baseUrl, installation, tag) => {
  const name = `kept-${tag}`;
  const config = "{:persist true :actions {:action :index :params [[:host]]}}";
  const added = await send("POST", `${baseUrl}/api/v1/stream/${name}`, { config: b64(config) });
  expect(added).toEqual({ status: 201, body: { message: "stream added" } });
  return {
    what: `stream ${name}`,
    async verify(base) {
      const read = await get(`${base}/api/v1/stream/${name}`);
      expect(read.status).toBe(200);
      const text = Buffer.from((read.body as { config: string }).config, "base64").toString("utf8");
      expect(text).toContain(":persist true");
      expect(text).toContain(":action :index");
      // The whole file, and no temporary file left behind.
      const apiStreams = join(installation.streams, ".vigie-api");
      expect(readFileSync(join(apiStreams, `${name}.edn`), "utf8")).toMatch(new RegExp(`^\\{:${name} \\{.*\\}\\}\\n$`));
      expect(readdirSync(apiStreams).filter((entry) => entry.endsWith(".tmp"))).toEqual([]);
    },
  };
};

const WRITERS: ReadonlyArray<readonly [string, Writer]> = [
  ["comment", writeComment],
  ["token", writeToken],
  ["healthcheck", writeHealthcheck],
  ["stream", writeStream],
];

describe("durability of acknowledged writes", () => {
  let vigie: VigieProcess | undefined;
  const directories: string[] = [];

  afterEach(async () => {
    if (vigie !== undefined) {
      vigie.child.kill("SIGKILL");
      await vigie.exited;
      vigie = undefined;
    }
    for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  });

  /** A fresh directory with a configuration: SQLite file, comments website, stream directory. */
  async function install(): Promise<Installation> {
    const directory = temporaryDirectory();
    directories.push(directory);
    const streams = join(directory, "streams");
    mkdirSync(streams);
    const port = await freePort();
    const closedPort = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${port}`,
        "database:",
        "  url: sqlite:./data/vigie.db",
        "comments:",
        `  admin-token: ${COMMENTS_ADMIN_TOKEN}`,
        "  websites:",
        "    - name: blog",
        "      auto-approve: true",
        "streams:",
        `  directories: [${JSON.stringify(streams)}]`,
        "",
      ].join("\n"),
    );
    return { directory, streams, configFile, port, closedPort };
  }

  async function start(installation: Installation): Promise<VigieProcess> {
    const { configFile, port, directory } = installation;
    vigie = await startVigie({
      configFile,
      port,
      cwd: directory,
      env: { VIGIE_ADMIN_NAME: ADMIN.name, VIGIE_ADMIN_PASSWORD: ADMIN.password },
    });
    return vigie;
  }

  /** SIGKILL, at once: no graceful shutdown, no flush, no close of the database. */
  async function kill(running: VigieProcess): Promise<void> {
    running.child.kill("SIGKILL");
    expect(await running.exited).toBe("SIGKILL");
    vigie = undefined;
  }

  /** Checks every write, and names all the lost ones rather than only the first. */
  async function verifyAll(baseUrl: string, written: readonly Written[]): Promise<void> {
    const lost: string[] = [];
    for (const write of written) {
      try {
        await write.verify(baseUrl);
      } catch (error) {
        lost.push(`${write.what} was lost: ${(error as Error).message}`);
      }
    }
    if (lost.length > 0) throw new Error(lost.join("\n"));
  }

  it("keeps a comment, a token, a healthcheck and a persisted stream when killed right after the last acknowledgement", async () => {
    const installation = await install();
    const first = await start(installation);
    const written: Written[] = [];
    for (const [tag, write] of WRITERS) written.push(await write(first.baseUrl, installation, tag));
    await kill(first);

    const second = await start(installation);
    await verifyAll(second.baseUrl, written);
  });

  it("keeps each module's write when killed right after that single acknowledgement", async () => {
    const installation = await install();
    const written: Written[] = [];
    let running = await start(installation);
    for (const [tag, write] of WRITERS) {
      written.push(await write(running.baseUrl, installation, tag));
      await kill(running);
      running = await start(installation);
      // This write and every earlier one: a restart must not lose what the previous one kept.
      await verifyAll(running.baseUrl, written);
    }
  });

  it("keeps a registry user created right before the kill", async () => {
    const installation = await install();
    const first = await start(installation);
    const created = await send("POST", `${first.baseUrl}/api/v1/registry/token`, {
      name: "t",
      user: ADMIN.name,
      password: ADMIN.password,
    });
    const { token } = created.body as { token: string };
    const user = await send(
      "POST",
      `${first.baseUrl}/api/v1/registry/user`,
      { name: "alice", description: "", password: "another-password", role: "tech", active: true },
      { authorization: `Bearer ${token}` },
    );
    expect(user.status).toBe(201);
    await kill(first);

    const second = await start(installation);
    const listed = await get(`${second.baseUrl}/api/v1/registry/user`, { authorization: token });
    expect(listed.status).toBe(200);
    const { users } = listed.body as { users: Array<{ name: string }> };
    expect(users.map((entry) => entry.name)).toEqual(["alice", "root"]);
  });
});
