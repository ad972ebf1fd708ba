/**
 * The command blocks of README.md and docs/ run against a fresh server, so that an example cannot go
 * stale (the convention, which blocks run, is in CONTRIBUTING.md and test/docs/blocks.ts).
 *
 * Each page with runnable blocks gets its own server: the built `dist/cli.js`, in a temporary
 * directory holding its `vigie.yaml` (the configuration the page's examples need, below), its
 * `./data/`, `examples/` (a link to the repository's) and `bin/vigie`. The blocks run there in
 * order, each with `bash -euo pipefail`, with `B` set to the server's address (the variable the
 * docs write, see docs/api.md); the variables a block sets are kept for the next blocks of the page,
 * as in a terminal. curl runs with `--fail-with-body` (a `.curlrc`), so an example answered with an
 * error status fails. Background jobs of a block end with it.
 *
 * Where unprivileged namespaces are available (`unshare -rn`), a page runs in a network namespace of
 * its own, with nothing but a loopback interface: the examples that name other hosts (healthchecks
 * of example.org) cannot reach them, and the default port 8080 is free for the examples that start
 * their own server. Without it, the pages marked `isolated` are skipped with the reason printed.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { dump } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePort, temporaryDirectory } from "../support/process.js";
import { type CommandBlock, commandBlocks, strayMarkers } from "./blocks.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** What the examples of a page need from their server and directory. */
interface Page {
  /** The configuration of the page's server, without `http` (added: loopback, a free port). */
  readonly config?: Record<string, unknown>;
  /** Files the examples take as given, by name in the page's directory. */
  readonly files?: Record<string, string>;
  /** Commands run before the block starting with the key (state the examples take as existing). */
  readonly before?: Record<string, string>;
  /** Whether the examples contact other hosts, so the page only runs in a network namespace. */
  readonly isolated?: boolean;
}

const PAGES: Record<string, Page> = {
  "docs/comments.md": {
    // A known question, so that the fixture below can answer it.
    config: {
      comments: {
        websites: [{ name: "blog" }],
        challenge: { type: "questions", questions: [{ question: "what is the result of: 7 + 3", answer: "10" }] },
      },
    },
    before: {
      // The admin API examples act on a comment, as sent from a page (docs/comments.md, by hand).
      "TOKEN=$(cat data/comments-admin-token)": [
        "c=$(curl -s $B/api/v1/challenge/blog/hello-world)",
        "curl -s -X POST $B/api/v1/comment/blog/hello-world -H 'content-type: application/json' \\",
        `  -d "$(jq -n --argjson c "$c" '{author: "Ann", content: "Nice post!", answer: "10", timestamp: $c.timestamp, signature: $c.signature}')" >/dev/null`,
        'ID=$(curl -s -H "Authorization: Bearer $(cat data/comments-admin-token)" $B/api/admin/comment/blog/hello-world | jq -r ".[0].id")',
      ].join("\n"),
    },
  },
  "docs/healthchecks.md": {
    // Two status pages, for the incident examples (pages "" and "internal").
    config: {
      healthchecks: {
        "status-pages": [
          { slug: "", title: "Acme status" },
          { slug: "internal", title: "Acme internal" },
        ],
      },
    },
    isolated: true,
  },
  "docs/registry.md": {
    files: { "ci.password": "a-password-for-ci\n" },
    before: {
      // The deletion examples delete a second token of root and a token of ci.
      'curl -s -X DELETE "$B/api/v1/registry/token/old%20laptop"': [
        "for t in 'root a-long-password old laptop' 'ci a-password-for-ci deploy'; do",
        "  set -- $t",
        "  curl -s -X POST $B/api/v1/registry/token -H 'content-type: application/json' \\",
        `    -d "{\\"user\\": \\"$1\\", \\"password\\": \\"$2\\", \\"name\\": \\"\${*:3}\\"}" >/dev/null`,
        "done",
      ].join("\n"),
    },
  },
  "docs/streams.md": { isolated: true },
};

/** Longest run of one block (or of the wait for the server), in milliseconds. */
const BLOCK_TIMEOUT_MS = 30_000;

/** Whether `unshare -rn` works here, and `ip` to bring the namespace's loopback up. */
const NAMESPACES =
  spawnSync("unshare", ["-rn", "sh", "-c", "ip link set lo up"], { stdio: "ignore" }).status === 0 &&
  spawnSync("nsenter", ["--version"], { stdio: "ignore" }).status === 0;

/** The tools the examples use besides bash and vigie; without one, the commands are skipped. */
const MISSING_TOOLS = ["curl", "jq"].filter(
  (tool) => spawnSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" }).status !== 0,
);
if (MISSING_TOOLS.length > 0) {
  console.warn(`skipping the commands of the docs: ${MISSING_TOOLS.join(", ")} not installed (Debian packages)`);
}

/** The pages checked: README.md, then every page of docs/. */
function pages(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

/** A finished run of commands. */
interface Run {
  readonly code: number | string;
  readonly stdout: string;
  readonly stderr: string;
}

/** Where a page's blocks run: its directory, its server, and how to enter its namespace. */
class PageRun {
  readonly directory = temporaryDirectory();
  readonly #server: ChildProcess;
  readonly #prefix: string[];
  readonly #environment: Record<string, string>;
  #serverOutput = "";

  constructor(page: Page, port: number, isolated: boolean) {
    const bin = join(this.directory, "bin");
    mkdirSync(bin);
    symlinkSync(CLI, join(bin, "vigie"));
    symlinkSync(join(ROOT, "examples"), join(this.directory, "examples"));
    for (const [name, text] of Object.entries(page.files ?? {})) writeFileSync(join(this.directory, name), text);
    writeFileSync(join(this.directory, ".curlrc"), "fail-with-body\nshow-error\nno-progress-meter\nmax-time = 20\n");
    writeFileSync(join(this.directory, ".doc-test-state"), "");
    writeFileSync(
      join(this.directory, "vigie.yaml"),
      dump({ http: { host: "127.0.0.1", port }, ...(page.config ?? {}) }),
    );
    this.#environment = {
      PATH: [bin, dirname(process.execPath), process.env.PATH ?? "/usr/bin:/bin"].join(":"),
      HOME: this.directory,
      CURL_HOME: this.directory,
      LANG: "C.UTF-8",
      B: `http://127.0.0.1:${port}`,
    };
    const serve = [process.execPath, CLI, "serve", "--config", "vigie.yaml"];
    // The file .doc-test-namespace says the namespace is ready to be entered.
    const inNamespace = 'ip link set lo up && : > .doc-test-namespace && exec "$@"';
    const command = isolated ? ["unshare", "-rn", "sh", "-c", inNamespace, "sh", ...serve] : serve;
    this.#server = spawn(command[0] as string, command.slice(1), {
      cwd: this.directory,
      env: this.#environment,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const collect = (chunk: Buffer): void => {
      this.#serverOutput += chunk.toString();
    };
    this.#server.stdout?.on("data", collect);
    this.#server.stderr?.on("data", collect);
    this.#prefix = isolated
      ? ["nsenter", "-t", String(this.#server.pid), "-U", "-n", "--preserve-credentials", "bash"]
      : ["bash"];
  }

  /** The server's output so far, for failure messages. */
  serverOutput(): string {
    return this.#serverOutput;
  }

  /**
   * Runs commands with `bash -euo pipefail` in the page's directory, in their own process group
   * (killed when bash exits or after the timeout), with the variables of the earlier runs.
   */
  async run(commands: string): Promise<Run> {
    const script = join(this.directory, ".doc-test-block");
    writeFileSync(script, `set -a\n. ./.doc-test-state\n${commands}\nset +a\nexport -p > ./.doc-test-state\n`);
    const out = join(this.directory, ".doc-test-stdout");
    const err = join(this.directory, ".doc-test-stderr");
    const descriptors = [openSync(out, "w"), openSync(err, "w")];
    const child = spawn(this.#prefix[0] as string, [...this.#prefix.slice(1), "-euo", "pipefail", script], {
      cwd: this.directory,
      env: this.#environment,
      stdio: ["ignore", descriptors[0] as number, descriptors[1] as number],
      detached: true,
    });
    for (const descriptor of descriptors) closeSync(descriptor);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, BLOCK_TIMEOUT_MS);
    const code = await new Promise<number | string>((done) =>
      child.on("exit", (exit, signal) => done(exit ?? signal ?? -1)),
    );
    clearTimeout(timer);
    killGroup(child);
    return {
      code: timedOut ? `timed out after ${BLOCK_TIMEOUT_MS / 1000} s` : code,
      stdout: readFileSync(out, "utf8"),
      stderr: readFileSync(err, "utf8"),
    };
  }

  /** Waits until the server answers `/healthz`, from where the blocks run. */
  async ready(): Promise<void> {
    const namespace = join(this.directory, ".doc-test-namespace");
    for (let wait = 0; wait < 200 && !existsSync(namespace); wait += 1) await sleep(100);
    const run = await this.run(
      'for i in $(seq 200); do curl -so /dev/null "$B/healthz" 2>/dev/null && exit 0; sleep 0.1; done; exit 1',
    );
    if (run.code !== 0) throw new Error(`vigie did not answer /healthz:\n${run.stderr}\n${this.#serverOutput}`);
  }

  async stop(): Promise<void> {
    if (this.#server.exitCode !== null || this.#server.signalCode !== null) return;
    const exited = new Promise((done) => this.#server.on("exit", done));
    this.#server.kill("SIGTERM");
    await exited;
  }
}

/** Ends a process group (a block's background jobs with it); nothing when it is gone. */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    // the group is gone
  }
}

/** The last lines of an output, for a failure message. */
function tail(text: string, lines = 30): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** `page:line (first line of the block)`, how a failure names a block. */
function nameOf(page: string, block: CommandBlock): string {
  return `${page}:${block.line} (${block.text.split("\n").find((line) => line.trim() !== "") ?? ""})`;
}

describe("doc-test markers and fixtures", () => {
  it.each(pages())("%s: every marker is a skip with a reason, right above an sh or bash fence", (page) => {
    expect(strayMarkers(readFileSync(join(ROOT, page), "utf8"))).toEqual([]);
  });

  it("each fixture of a page comes before one of its runnable blocks", () => {
    const stale: string[] = [];
    for (const [page, setup] of Object.entries(PAGES)) {
      const blocks = commandBlocks(readFileSync(join(ROOT, page), "utf8")).filter((block) => block.skip === undefined);
      if (blocks.length === 0) stale.push(`${page}: no runnable block`);
      for (const start of Object.keys(setup.before ?? {})) {
        if (!blocks.some((block) => block.text.trimStart().startsWith(start))) stale.push(`${page}: ${start}`);
      }
    }
    expect(stale).toEqual([]);
  });
});

for (const page of pages()) {
  const blocks = commandBlocks(readFileSync(join(ROOT, page), "utf8")).filter((block) => block.skip === undefined);
  if (blocks.length === 0) continue;
  const setup = PAGES[page] ?? {};
  const missingNamespaces = setup.isolated === true && !NAMESPACES && MISSING_TOOLS.length === 0;
  if (missingNamespaces) {
    console.warn(`skipping the commands of ${page}: they contact other hosts, and unshare -rn is not available here`);
  }

  describe.skipIf(missingNamespaces || MISSING_TOOLS.length > 0)(`the commands of ${page}`, () => {
    let run: PageRun;
    let failed: string | undefined;

    beforeAll(async () => {
      run = new PageRun(setup, await freePort(), NAMESPACES);
      await run.ready();
    });
    afterAll(async () => {
      await run?.stop();
    });

    it.each(blocks.map((block) => [nameOf(page, block), block] as const))("%s", async (name, block) => {
      // Blocks build on each other: after a failure the rest of the page says so, not more.
      if (failed !== undefined) throw new Error(`not run: ${failed} failed before it`);
      const before = Object.entries(setup.before ?? {}).find(([start]) => block.text.trimStart().startsWith(start));
      const result = await run.run(before === undefined ? block.text : `${before[1]}\n${block.text}`);
      if (result.code !== 0) {
        failed = name;
        throw new Error(
          `${name}: exit ${result.code}\n--- stderr\n${tail(result.stderr)}\n--- stdout\n${tail(result.stdout)}\n--- server\n${tail(run.serverOutput(), 15)}`,
        );
      }
    });
  });
}
