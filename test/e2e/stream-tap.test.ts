/**
 * `vigie stream tap` and `vigie stream graph` against the real `vigie` process with
 * `security.require-token: true` (docs/streams.md, Watching a running stream): three taps run as
 * `node dist/cli.js stream tap …` processes (the stream's entry, the entry with `--where`, and a
 * `:tap-point`) print the JSON lines of the events pushed meanwhile and exit 0 on Ctrl-C; the graph
 * comes as SVG and as JSON with its counts; an unknown stream or a missing token fails with exit 1.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLI,
  freePort,
  runCli,
  startVigieWithToken,
  stopVigie,
  temporaryDirectory,
  type VigieProcess,
} from "../support/process.js";
import { until } from "../support/until.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const STREAM = `{:actions {:action :where :params [[:> :metric 3]] :tap-point "hot"
  :children [{:action :increment :children [{:action :index :params [[:host]]}]}]}}`;

/** A `vigie stream tap` process and the lines it printed. */
interface Tapper {
  readonly child: ChildProcess;
  lines(): string[];
  stderr(): string;
  readonly exited: Promise<number | string>;
}

describe("vigie stream tap and graph against the real process", () => {
  const directory = temporaryDirectory();
  let vigie: VigieProcess | undefined;
  let token = "";
  let url = "";
  const tappers: Tapper[] = [];

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith("{") ? JSON.parse(text) : text };
  };
  const subscribers = async (channel: string) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(new RegExp(`stream_subscribers\\{channel="${channel}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  };

  /** Starts `vigie stream tap web ARGS`, the token in $VIGIE_TOKEN, and waits until it watches. */
  async function tap(args: readonly string[], channel: string): Promise<Tapper> {
    const before = await subscribers(channel);
    const child = spawn(process.execPath, [CLI, "stream", "tap", "web", "--url", url, ...args], {
      cwd: directory,
      env: { ...process.env, VIGIE_TOKEN: token },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | string>((done) =>
      child.on("exit", (code, signal) => done(code ?? signal ?? -1)),
    );
    const tapper: Tapper = {
      child,
      lines: () => stdout.split("\n").filter((line) => line !== ""),
      stderr: () => stderr,
      exited,
    };
    tappers.push(tapper);
    await until(async () => ((await subscribers(channel)) > before ? true : undefined), `the tap on ${channel}`);
    return tapper;
  }

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(
      configFile,
      [
        "http:",
        `  port: ${port}`,
        "security:",
        "  require-token: true",
        `database:\n  url: ${JSON.stringify(`sqlite:${join(directory, "vigie.db")}`)}`,
        "",
      ].join("\n"),
    );
    ({ vigie, token } = await startVigieWithToken({ configFile, port, cwd: directory }));
    expect(await api("POST", "/api/v1/stream/web", { config: b64(STREAM) })).toMatchObject({ status: 201 });
  }, 60_000);

  afterAll(async () => {
    for (const tapper of tappers) if (tapper.child.exitCode === null) tapper.child.kill("SIGKILL");
    await stopVigie(vigie);
  });

  it("prints the events entering the stream, those --where keeps, and those leaving a :tap-point", async () => {
    const entry = await tap([], "tap/web");
    const hostB = await tap(["--where", '[:= :host "b"]'], "tap/web");
    const hot = await tap(["--point", "hot"], "tap/web/hot");
    const events = [
      { host: "a", metric: 1, time: 1 },
      { host: "b", metric: 5, time: 2 },
      { host: "c", metric: 9, time: 3 },
    ];
    expect((await api("PUT", "/api/v1/stream/web", { events })).status).toBe(200);
    const parsed = async (tapper: Tapper, count: number) =>
      until(
        async () => (tapper.lines().length >= count ? tapper.lines().map((line) => JSON.parse(line)) : undefined),
        "tap lines",
      );
    expect(await parsed(entry, 3)).toEqual(events);
    expect(await parsed(hostB, 1)).toEqual([events[1]]);
    expect(await parsed(hot, 2)).toEqual([events[1], events[2]]);

    for (const tapper of [entry, hostB, hot]) {
      tapper.child.kill("SIGINT");
      expect(await tapper.exited, tapper.stderr()).toBe(0);
    }
    // Exactly what was pushed: no line left over.
    expect(entry.lines()).toHaveLength(3);
    expect(hostB.lines()).toHaveLength(1);
    await until(async () => ((await subscribers("tap/web")) === 0 ? true : undefined), "the taps to be gone");
  });

  it("writes the graph as SVG, or JSON with its counts", async () => {
    const svg = await runCli(["stream", "graph", "web", "--url", url, "--token", token], { cwd: directory });
    expect(svg, svg.stderr).toMatchObject({ code: 0 });
    expect(svg.stdout).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg /);
    expect(svg.stdout.match(/<rect /g)).toHaveLength(3);
    const json = await runCli(["stream", "graph", "web", "--json", "--url", url], {
      cwd: directory,
      env: { VIGIE_TOKEN: token },
    });
    expect(json, json.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(json.stdout)).toMatchObject({ action: "where", "tap-point": "hot", in: 3, out: 2 });
  });

  it("fails with exit 1 and the server's reason for an unknown stream, point or a missing token", async () => {
    const unknown = await runCli(["stream", "tap", "nope", "--url", url, "--token", token], { cwd: directory });
    expect(unknown).toMatchObject({ code: 1, stderr: "vigie: 404: stream nope not found\n" });
    const point = await runCli(["stream", "tap", "web", "--point", "cold", "--url", url, "--token", token], {
      cwd: directory,
    });
    expect(point).toMatchObject({ code: 1, stderr: 'vigie: 404: stream web has no :tap-point "cold"\n' });
    const anonymous = await runCli(["stream", "graph", "web", "--url", url], {
      cwd: directory,
      env: { VIGIE_TOKEN: "" },
    });
    expect(anonymous).toMatchObject({ code: 1, stderr: "vigie: 401: missing token\n" });
    const badUrl = await runCli(["stream", "graph", "web", "--url", "ftp://x"], { cwd: directory });
    expect(badUrl.code).toBe(2);
  });
});
