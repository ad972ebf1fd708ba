/**
 * The container image of the root Dockerfile, built and run without a Docker daemon: Debian's
 * buildah (`--isolation chroot --storage-driver vfs`) builds it from a base assembled here, since no
 * registry of images is reachable: `mmdebstrap --variant=minbase bookworm` plus this machine's
 * Node.js (node, npm and headers under /usr/local, as in the official image), named by the `BASE`
 * build argument; the build stage's `BUILD_BASE` is the same with python3, make and g++, so that
 * better-sqlite3 compiles without a download. Then the image's own entry point runs with
 * `buildah run --isolation chroot --network host` (podman run is refused in this sandbox), a data
 * directory mounted on its volume and a configuration on /etc/vigie/vigie.yaml: /healthz answers
 * and the image's HEALTHCHECK says healthy, the healthcheck API needs a token, a comment is posted,
 * and after a stop by SIGTERM and a start on the same volume the comment is still there. The image
 * runs as a user other than root and holds no compiler, no tests and no npm cache.
 *
 * buildah and mmdebstrap come from Debian (.ci/run installs them); without them, without root, or
 * when the base cannot be assembled here, the test is skipped with the reason. The whole run takes
 * several minutes, most of it compiling better-sqlite3; the build runs at a lower priority so that
 * the tests beside it keep their timings.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, temporaryDirectory } from "../support/process.js";
import { until } from "../support/until.js";

const ROOT = resolve(import.meta.dirname, "../..");
/** The uid and gid the Dockerfile gives the `vigie` user. */
const VIGIE_ID = 10001;
const MINUTE = 60_000;

/** The path of a command found on PATH or in the sbin directories, else undefined. */
function tool(name: string): string | undefined {
  for (const directory of [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/sbin"]) {
    const candidate = join(directory, name);
    if (directory !== "" && spawnSync("test", ["-x", candidate]).status === 0) return candidate;
  }
  return undefined;
}

const BUILDAH = tool("buildah");
const MMDEBSTRAP = tool("mmdebstrap");
/** This machine's Node.js installation: the binary, and npm and the headers beside it. */
const NODE_PREFIX = dirname(dirname(process.execPath));
const NPM = join(NODE_PREFIX, "lib/node_modules/npm");
const NODE_HEADERS = join(NODE_PREFIX, "include/node");

/** Why the test cannot run on this machine, or undefined. */
function unsupported(): string | undefined {
  if (BUILDAH === undefined) return "buildah is not installed (Debian package)";
  if (MMDEBSTRAP === undefined) return "mmdebstrap is not installed (Debian package)";
  if (process.getuid?.() !== 0) return "buildah without a daemon or subordinate ids needs root";
  if (!existsSync(NPM)) return `npm is not at ${NPM}`;
  if (!existsSync(join(NODE_HEADERS, "node.h"))) return `the Node.js headers are not at ${NODE_HEADERS}`;
  return undefined;
}

const SKIP = unsupported();
if (SKIP !== undefined) console.warn(`skipping the container image test: ${SKIP}`);

/** A finished command: its exit code (or signal) and its output, both streams together. */
interface Finished {
  readonly code: number | string;
  readonly output: string;
}

/** Runs a command at a lower priority, killed after `timeoutMs`; keeps the last 64 KiB of output. */
async function run(command: string, args: readonly string[], timeoutMs: number): Promise<Finished> {
  const child = spawn("nice", ["-n", "10", command, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    timeout: timeoutMs,
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const code = await new Promise<number | string>((done) =>
    child.on("close", (exit, signal) => done(exit ?? signal ?? -1)),
  );
  return { code, output };
}

/** Runs a command that must succeed; throws with its output otherwise. */
async function must(command: string, args: readonly string[], timeoutMs: number): Promise<string> {
  const { code, output } = await run(command, args, timeoutMs);
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${code}:\n${output}`);
  return output;
}

/** The Debian mirror this machine's apt uses for bookworm, else Debian's own. */
function debianMirror(): string {
  const files = ["/etc/apt/sources.list"];
  if (existsSync("/etc/apt/sources.list.d")) {
    files.push(...readdirSync("/etc/apt/sources.list.d").map((name) => join("/etc/apt/sources.list.d", name)));
  }
  for (const file of files.filter((name) => /\.(list|sources)$/.test(name) && existsSync(name))) {
    const text = readFileSync(file, "utf8");
    const oneLine = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s+bookworm\s/m.exec(text)?.[1];
    if (oneLine !== undefined) return oneLine;
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(stanza)?.[1];
      if (uri !== undefined && /^Suites:.*\bbookworm\b/m.test(stanza)) return uri;
    }
  }
  return "http://deb.debian.org/debian";
}

/** Global options of every buildah command: a storage of the test's own, in vfs. */
let storage: string[] = [];
const buildah = (args: readonly string[], timeoutMs = 2 * MINUTE) =>
  must(BUILDAH as string, [...storage, ...args], timeoutMs);

/**
 * Assembles a base image: minbase bookworm with `packages`, this machine's Node.js under
 * /usr/local, and `environment`; committed as `name`.
 */
async function assembleBase(directory: string, name: string, packages: string[], environment: string[]) {
  const hook = join(directory, `${name.replace(/\W/g, "-")}-hook.sh`);
  const lines = [
    'set -e; root="$1"',
    'mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/usr/local/include" "$root/usr/local/etc"',
    `cp ${process.execPath} "$root/usr/local/bin/node"`,
    `cp -a ${NPM} "$root/usr/local/lib/node_modules/npm"`,
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"',
    'ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"',
    `cp -a ${NODE_HEADERS} "$root/usr/local/include/node"`,
  ];
  // The certificates this machine's Node.js trusts, for npm inside the build.
  const certificates = process.env.NODE_EXTRA_CA_CERTS;
  if (certificates !== undefined && existsSync(certificates)) {
    lines.push(`cp ${certificates} "$root/usr/local/etc/extra-ca-certificates.crt"`);
    environment.push("NODE_EXTRA_CA_CERTS=/usr/local/etc/extra-ca-certificates.crt");
  }
  writeFileSync(hook, `${lines.join("\n")}\n`);
  const tarball = join(directory, `${name.replace(/\W/g, "-")}.tar`);
  const include = packages.length > 0 ? [`--include=${packages.join(",")}`] : [];
  const mirror = debianMirror();
  await must(
    MMDEBSTRAP as string,
    ["--variant=minbase", ...include, `--customize-hook=sh ${hook} "$1"`, "bookworm", tarball, mirror],
    8 * MINUTE,
  );
  const container = (await buildah(["from", "scratch"])).trim();
  await buildah(["add", container, tarball, "/"], 5 * MINUTE);
  const path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  await buildah(["config", ...[path, ...environment].flatMap((pair) => ["--env", pair]), "--cmd", "node", container]);
  await buildah(["commit", "--rm", container, name], 5 * MINUTE);
  rmSync(tarball, { force: true });
}

/** The configuration of an image, in Docker's format. */
interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  Cmd: string[];
  Volumes: Record<string, unknown>;
  ExposedPorts: Record<string, unknown>;
  WorkingDir: string;
  StopSignal: string;
  Labels: Record<string, string>;
  Healthcheck: { Test: string[] };
}

/** Every process whose parent chain reaches `ancestor`. */
function descendants(ancestor: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  return [...parents.keys()].filter((pid) => {
    for (let parent = parents.get(pid), hops = 0; parent !== undefined && hops < 64; hops++) {
      if (parent === ancestor) return true;
      parent = parents.get(parent);
    }
    return false;
  });
}

/** A running container: the buildah process, the server's own process, its output. */
interface Running {
  readonly buildah: number;
  readonly server: number;
  output(): string;
  readonly exited: Promise<number | string>;
}

/** Awaits `promise`, or throws after `timeoutMs`. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Where a container of the test finds its volume and configuration file, as `docker run -v` gives them. */
interface Mounts {
  readonly volume: string;
  readonly configFile: string;
}

/** `buildah run` options: the host network, the volume and the configuration file. */
function runOptions({ volume, configFile }: Mounts): string[] {
  return [
    "run",
    "--isolation",
    "chroot",
    "--network",
    "host",
    "-v",
    `${volume}:/var/lib/vigie`,
    "-v",
    `${configFile}:/etc/vigie/vigie.yaml:ro`,
  ];
}

/**
 * Runs `command` in `container` as `docker run` would start it, and waits until `/healthz` of
 * `base` answers 200 (one minute at most).
 */
async function startContainer(
  container: string,
  mounts: Mounts,
  command: readonly string[],
  environment: readonly string[],
  base: string,
): Promise<Running> {
  const options = [...runOptions(mounts), ...environment.flatMap((pair) => ["-e", pair])];
  const child = spawn(BUILDAH as string, [...storage, ...options, container, "--", ...command], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  let gone = false;
  const exited = new Promise<number | string>((done) =>
    child.on("close", (code, signal) => {
      gone = true;
      done(code ?? signal ?? -1);
    }),
  );
  await until(
    async () => {
      if (gone) throw new Error(`the container exited before answering:\n${output}`);
      const answer = await fetch(`${base}/healthz`).catch(() => undefined);
      return answer?.status === 200 ? true : undefined;
    },
    "/healthz of the container",
    MINUTE,
  );
  const server = descendants(child.pid as number).find((pid) =>
    readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("/opt/vigie/dist/cli.js"),
  );
  if (server === undefined) throw new Error(`no Vigie process under buildah run:\n${output}`);
  return { buildah: child.pid as number, server, output: () => output, exited };
}

/** What `docker stop` does: the stop signal to the process the entry point became; exit 0 within 30 s. */
async function stopContainer(running: Running, signal: string): Promise<void> {
  process.kill(running.server, signal);
  expect(await within(running.exited, 30_000, "the container to stop"), running.output()).toBe(0);
  expect(running.output()).toContain('"msg":"stopped"');
}

/** Posts a comment as a visitor's page does: a challenge, its answer, the comment. */
async function postComment(base: string, author: string, content: string): Promise<number> {
  const challenge = (await (await fetch(`${base}/api/v1/challenge/blog/hello`)).json()) as {
    question: string;
    signature: string;
    timestamp: number;
  };
  const [, left, operator, right] = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(challenge.question) ?? [];
  const [a, b] = [Number(left), Number(right)];
  const answer = operator === "+" ? a + b : operator === "-" ? a - b : a * b;
  const response = await fetch(`${base}/api/v1/comment/blog/hello`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      author,
      content,
      answer: String(answer),
      signature: challenge.signature,
      timestamp: challenge.timestamp,
    }),
  });
  return response.status;
}

describe.skipIf(SKIP !== undefined)("the container image (Dockerfile)", () => {
  const directory = SKIP === undefined ? temporaryDirectory() : "";
  const image = "localhost/vigie-image-test";
  const version: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
  let unavailable: string | undefined;
  let config: ImageConfig | undefined;
  let container = "";
  const running: Running[] = [];

  beforeAll(async () => {
    storage = ["--storage-driver", "vfs", "--root", join(directory, "storage"), "--runroot", join(directory, "run")];
    const started = Date.now();
    const seconds = (since: number) => `${Math.round((Date.now() - since) / 1000)} s`;
    try {
      await assembleBase(directory, "localhost/vigie-test-base", [], []);
      // node-gyp finds the headers of the Node.js it builds for under /usr/local, as this machine's npm does.
      await assembleBase(
        directory,
        "localhost/vigie-test-build-base",
        ["python3", "make", "g++"],
        ["npm_config_nodedir=/usr/local"],
      );
    } catch (error) {
      unavailable = `the base image cannot be assembled here: ${error instanceof Error ? error.message.slice(0, 2000) : String(error)}`;
      console.warn(`skipping the container image test: ${unavailable}`);
      return;
    }
    console.info(`image test: bases assembled in ${seconds(started)}`);
    const building = Date.now();
    const buildArguments = [
      "BASE=localhost/vigie-test-base",
      "BUILD_BASE=localhost/vigie-test-build-base",
      `VERSION=${version}`,
    ];
    const bud = ["bud", "--isolation", "chroot", "--format", "docker", "-t", image];
    await buildah([...bud, ...buildArguments.flatMap((pair) => ["--build-arg", pair]), ROOT], 20 * MINUTE);
    const images = JSON.parse(await buildah(["images", "--json"])) as Array<{ names?: string[]; size: string }>;
    const size = (name: string) => images.find((entry) => entry.names?.some((n) => n.startsWith(`${name}:`)))?.size;
    console.info(
      `image test: image built in ${seconds(building)}: ${size(image)} (its base ${size("localhost/vigie-test-base")}); ` +
        `${seconds(started)} in all`,
    );
    config = JSON.parse(await buildah(["inspect", "--type", "image", image])).Docker.config;
    // One working container for every run (each copies the whole image in vfs). Its copy of the
    // image's VOLUME is dropped: buildah run puts an empty directory of its own there for each
    // volume of the configuration, and with several mounts, now and then over the `-v` given for
    // the same place; `docker run -v` replaces the volume, as the test means to.
    container = (await buildah(["from", image])).trim();
    await buildah(["config", "--volume", "/var/lib/vigie-", container]);
  }, 30 * MINUTE);

  afterAll(async () => {
    for (const container of running) {
      for (const pid of [container.server, container.buildah]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    if (storage.length > 0) await run(BUILDAH as string, [...storage, "rm", "--all"], 2 * MINUTE);
  }, 3 * MINUTE);

  /** Runs `command` in the test's container of the image, as its user unless `user` says otherwise. */
  async function inImage(command: string[], user?: string): Promise<Finished> {
    const options = ["run", "--isolation", "chroot", ...(user === undefined ? [] : ["--user", user])];
    return run(BUILDAH as string, [...storage, ...options, container, "--", ...command], MINUTE);
  }

  it("is described as the docs say: user, volume, port, stop signal, healthcheck, labels", (context) => {
    if (unavailable !== undefined || config === undefined) return context.skip();
    expect(config.User).toBe("vigie:vigie");
    expect(Object.keys(config.Volumes)).toEqual(["/var/lib/vigie"]);
    expect(Object.keys(config.ExposedPorts)).toEqual(["8080/tcp"]);
    expect(config.WorkingDir).toBe("/var/lib/vigie");
    expect(config.StopSignal).toBe("SIGTERM");
    expect(config.Entrypoint).toEqual(["vigie"]);
    expect(config.Cmd).toEqual(["serve"]);
    expect(config.Healthcheck.Test).toEqual(["CMD", "node", "/opt/vigie/deploy/image/healthcheck.mjs"]);
    expect(config.Env).toEqual(
      expect.arrayContaining([
        "VIGIE_HTTP_HOST=0.0.0.0",
        "VIGIE_DATABASE_URL=sqlite:/var/lib/vigie/vigie.db",
        "VIGIE_REQUIRE_TOKEN=true",
      ]),
    );
    expect(config.Labels).toMatchObject({
      "org.opencontainers.image.title": "Vigie",
      "org.opencontainers.image.licenses": "MIT",
      "org.opencontainers.image.version": version,
      "org.opencontainers.image.base.name": "localhost/vigie-test-base",
    });
  });

  it(
    "runs as its own user and holds no compiler, no tests, no sources and no npm cache",
    async (context) => {
      if (unavailable !== undefined || config === undefined) return context.skip();
      const identity = await inImage(["id", "-u"]);
      expect(identity.output.trim()).toBe(String(VIGIE_ID));
      const look = await inImage(
        [
          "sh",
          "-c",
          "for c in gcc g++ cc c++ make python3; do command -v $c; done; ls -A /opt/vigie; " +
            "ls -d /root/.npm /var/lib/vigie/.npm /tmp/* /opt/vigie/test /opt/vigie/src 2>/dev/null; " +
            'echo "size: $(du -sh /opt/vigie | cut -f1)"',
        ],
        "0:0",
      );
      const lines = look.output.trim().split("\n");
      console.info(`image test: /opt/vigie holds ${lines.find((line) => line.startsWith("size: "))?.slice(6)}`);
      const listing = lines.filter((line) => !line.startsWith("size: ")).sort();
      expect(listing).toEqual(["LICENSE", "deploy", "dist", "docs", "node_modules", "package.json", "proto"]);
      // `vigie init` finds the page it takes the meaning of each key from.
      const init = await inImage([
        "sh",
        "-c",
        "vigie init --dir /tmp/init && cat /tmp/init/vigie.yaml && rm -r /tmp/init",
      ]);
      expect(init.code, init.output).toBe(0);
      expect(init.output).toContain("bind address; loopback by default");
      // The command reads V8's code cache the build made (a cache of over a megabyte; docs/operations.md).
      const cached = await inImage(["node", "--profile-deserialization", "/opt/vigie/dist/cli.js", "--version"]);
      expect(cached.code, cached.output).toBe(0);
      expect(cached.output).toMatch(/\[Deserializing from \d{7,} bytes/);
    },
    5 * MINUTE,
  );

  it(
    "serves on its volume: /healthz, a token for the APIs, a comment kept across a stop and a start",
    async (context) => {
      if (unavailable !== undefined || config === undefined) return context.skip();
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // The volume belongs to the image's user, 0700 like the directory the image holds.
      const mounts = { volume: join(directory, "volume"), configFile: join(directory, "vigie.yaml") };
      mkdirSync(mounts.volume);
      chownSync(mounts.volume, VIGIE_ID, VIGIE_ID);
      chmodSync(mounts.volume, 0o700);
      // The port comes from the file: the entry point reads /etc/vigie/vigie.yaml, and so does the healthcheck.
      writeFileSync(
        mounts.configFile,
        `http:\n  port: ${port}\ncomments:\n  websites:\n    - name: blog\n      auto-approve: true\n`,
        { mode: 0o644 },
      );
      const command = [...config.Entrypoint, ...config.Cmd];
      const check = config.Healthcheck.Test.slice(1);
      const healthcheck = async () => {
        const options = [...runOptions(mounts), container, "--", ...check];
        return run(BUILDAH as string, [...storage, ...options], MINUTE);
      };
      const admin = ["VIGIE_ADMIN_NAME=root", "VIGIE_ADMIN_PASSWORD=a-long-password"];

      const first = await startContainer(container, mounts, command, [`VIGIE_PUBLIC_URL=${base}`, ...admin], base);
      running.push(first);
      // Not root; the public URL from the environment; the database on the volume.
      expect(readFileSync(`/proc/${first.server}/status`, "utf8")).toMatch(new RegExp(`^Uid:\\s+${VIGIE_ID}\\s`, "m"));
      expect(first.output()).toContain(`"msg":"health: ${base}/healthz"`);
      expect(first.output()).toContain('"msg":"database: /var/lib/vigie/vigie.db"');
      const healthy = await healthcheck();
      expect(healthy.code, healthy.output).toBe(0);

      // security.require-token is on: the healthcheck API wants a token of the admin the environment made.
      expect((await fetch(`${base}/healthcheck`)).status).toBe(401);
      const created = await fetch(`${base}/api/v1/registry/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "image test", user: "root", password: "a-long-password" }),
      });
      expect(created.status).toBe(201);
      const { token } = (await created.json()) as { token: string };
      expect((await fetch(`${base}/healthcheck`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

      expect(await postComment(base, "Ann", "Kept on the volume")).toBe(201);
      const listed = async () => (await (await fetch(`${base}/api/v1/comment/blog/hello`)).json()) as unknown[];
      const before = await listed();
      expect(before).toEqual([expect.objectContaining({ author: "Ann", content: "Kept on the volume" })]);
      await stopContainer(first, config.StopSignal);
      expect((await healthcheck()).code).toBe(1);

      const second = await startContainer(container, mounts, command, [], base);
      running.push(second);
      expect(await listed()).toEqual(before);
      await stopContainer(second, config.StopSignal);
    },
    5 * MINUTE,
  );
});
