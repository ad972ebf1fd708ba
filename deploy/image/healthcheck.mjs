/**
 * The HEALTHCHECK of the container image: GET /healthz on the address the server listens on, with
 * node alone (docs/operations.md#container-image). The port and host come from where the server
 * takes them: VIGIE_HTTP_PORT and VIGIE_HTTP_HOST, else `http.port` and `http.host` of the
 * configuration file (VIGIE_CONFIG, else /etc/vigie/vigie.yaml when present), else the defaults.
 * Only these two keys are read, so that each check costs milliseconds rather than loading the
 * whole server. Exits 0 when the server answers 200 within 4 s, 1 otherwise, saying why on
 * standard error.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The file the image's `vigie` command reads when VIGIE_CONFIG names none. */
const DEFAULT_FILE = "/etc/vigie/vigie.yaml";

/** The `http` section of the configuration file, or an empty one. */
function httpSection() {
  const file = process.env.VIGIE_CONFIG || (existsSync(DEFAULT_FILE) ? DEFAULT_FILE : undefined);
  if (file === undefined) return {};
  const { CORE_SCHEMA, load } = require("js-yaml");
  const document = load(readFileSync(file, "utf8"), { schema: CORE_SCHEMA });
  return document?.http ?? {};
}

/** Where to reach the server from inside the container: a wildcard address means loopback. */
function loopbackFor(host) {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

try {
  const http = httpSection();
  const host = process.env.VIGIE_HTTP_HOST || http.host || "127.0.0.1";
  const port = process.env.VIGIE_HTTP_PORT || http.port || 8080;
  const url = `http://${loopbackFor(String(host))}:${port}/healthz`;
  const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  process.exit(0);
} catch (error) {
  const cause = error?.cause?.message ? ` (${error.cause.message})` : "";
  process.stderr.write(`unhealthy: ${error instanceof Error ? error.message : String(error)}${cause}\n`);
  process.exit(1);
}
