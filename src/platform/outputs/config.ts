/**
 * The outputs' configuration (docs/outputs.md): the top-level `outputs:` section, and
 * `streams.outputs`, still accepted and merged with it. Each output has a type, the keys every type
 * takes (queue, batches, timeouts, retries) and its type's own. URLs and header values may carry
 * secrets and are never echoed in an error (docs/configuration.md).
 */
import { statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Duration } from "../duration.js";
import { secretFile } from "../secret-file.js";
import * as v from "../validation.js";
import { checkCredentials } from "./credentials.js";
import { ELASTICSEARCH_SECRETS, elasticsearchShape } from "./elasticsearch-output.js";
import { headers, httpUrl } from "./fields.js";
import { graphiteShape } from "./graphite-output.js";
import { checkInfluxdbTarget, INFLUXDB_SECRETS, influxdbShape } from "./influxdb-output.js";
import { LOKI_SECRETS, lokiShape } from "./loki-output.js";
import { DISCORD_SECRETS, discordShape } from "./notifiers/discord.js";
import { EMAIL_SECRETS, emailShape } from "./notifiers/email.js";
import { MATRIX_SECRETS, matrixShape } from "./notifiers/matrix.js";
import { NTFY_SECRETS, ntfyShape } from "./notifiers/ntfy.js";
import { PAGERDUTY_SECRETS, pagerdutyShape } from "./notifiers/pagerduty.js";
import { SLACK_SECRETS, slackShape } from "./notifiers/slack.js";
import { TELEGRAM_SECRETS, telegramShape } from "./notifiers/telegram.js";
import { WEBHOOK_SECRETS, webhookShape } from "./notifiers/webhook.js";

const seconds = (count: number): Duration => ({ text: `${count}s`, milliseconds: count * 1000 });

/** The output types (docs/outputs.md). */
export const OUTPUT_TYPES = [
  "http",
  "file",
  "prometheus-remote-write",
  "alertmanager",
  "loki",
  "elasticsearch",
  "influxdb",
  "graphite",
  "email",
  "slack",
  "discord",
  "telegram",
  "ntfy",
  "matrix",
  "pagerduty",
  "webhook",
] as const;
/** One of {@link OUTPUT_TYPES}. */
export type OutputType = (typeof OUTPUT_TYPES)[number];

/** The formats of the `http` output (docs/outputs.md). */
export const HTTP_FORMATS = ["json", "ndjson", "slack", "text"] as const;

/** The default `batch-size` of each output type (docs/outputs.md). */
export const DEFAULT_BATCH_SIZES: Readonly<Record<OutputType, number>> = {
  http: 100,
  file: 1000,
  "prometheus-remote-write": 1000,
  alertmanager: 64,
  loki: 1000,
  elasticsearch: 500,
  influxdb: 1000,
  graphite: 1000,
  // Notifier types send one message per event.
  slack: 1,
  discord: 1,
  telegram: 1,
  ntfy: 1,
  webhook: 1,
  email: 1,
  matrix: 1,
  pagerduty: 1,
};

/**
 * Checks that the directory of every `file` output exists (the output creates none). Run at start-up, not when the configuration is parsed: `vigie stream test` and
 * `vigie config check` may run where the server's directories do not exist.
 * @throws v.ValidationError naming `<section>.<name>.path`
 */
export function checkOutputFiles(outputs: Readonly<Record<string, OutputDefinition>>, section = "outputs"): void {
  for (const [name, output] of Object.entries(outputs)) {
    if (output.type !== "file") continue;
    const directory = dirname(resolve(output.path));
    let isDirectory = false;
    try {
      isDirectory = statSync(directory).isDirectory();
    } catch {
      // missing or unreadable: refused below
    }
    if (!isDirectory) {
      throw new v.ValidationError(
        `${section}.${name}.path`,
        `must be in an existing directory (${directory} is not one)`,
        output.path,
      );
    }
  }
}

/** A field name of an event, as written in YAML (`host`, `service`). */
const fieldName = v.string({ min: 1, max: 128 });

/** Keys every output type takes (docs/outputs.md). */
const commonShape = {
  /** Events the output's queue holds before new ones are dropped. */
  "queue-size": v.withDefault(v.integer(1, 100_000_000), 10_000),
  /** Largest batch; the default depends on the type ({@link DEFAULT_BATCH_SIZES}). */
  "batch-size": v.optional(v.integer(1, 100_000)),
  /** How long a batch waits for more events after its first one. */
  "flush-interval": v.withDefault(v.duration(1), seconds(1)),
  /** Deadline of one request (or one file write). */
  timeout: v.withDefault(v.duration(1), seconds(10)),
  /** How long a batch is retried after its first try before it is dropped. */
  "max-retry-time": v.withDefault(v.duration(0), seconds(300)),
  /**
   * Keeps the queue in the database, so that accepted events survive a restart or a crash and are
   * delivered after it, at least once, in order; `max-retry-time` then does not apply.
   */
  durable: v.withDefault(v.boolean(), false),
};

const typeShapes = {
  http: {
    url: v.required(httpUrl),
    headers: v.withDefault(headers, {}),
    format: v.withDefault(v.oneOf(HTTP_FORMATS), "json"),
  },
  file: {
    path: v.required(v.string({ min: 1 })),
    "date-suffix": v.withDefault(v.boolean(), false),
  },
  "prometheus-remote-write": {
    url: v.required(httpUrl),
    headers: v.withDefault(headers, {}),
  },
  alertmanager: {
    url: v.required(httpUrl),
    headers: v.withDefault(headers, {}),
    labels: v.withDefault(v.array(fieldName, { max: 64 }), ["host"]),
    "generator-url": v.optional(httpUrl),
  },
  loki: lokiShape,
  elasticsearch: elasticsearchShape,
  influxdb: influxdbShape,
  graphite: graphiteShape,
  slack: slackShape,
  discord: discordShape,
  telegram: telegramShape,
  ntfy: ntfyShape,
  webhook: webhookShape,
  email: emailShape,
  matrix: matrixShape,
  pagerduty: pagerdutyShape,
} as const;

const REJECT_UNKNOWN = { unknownKeys: "reject" } as const;

/** Fills in the `batch-size` default of the output's type. */
function withBatchSize<D extends { readonly type: OutputType; readonly "batch-size"?: number | undefined }>(
  validate: v.Validator<D>,
): v.Validator<Omit<D, "batch-size"> & { readonly "batch-size": number }> {
  return (value, path) => {
    const parsed = validate(value, path);
    return { ...parsed, "batch-size": parsed["batch-size"] ?? DEFAULT_BATCH_SIZES[parsed.type] };
  };
}

/** A validator followed by a check across keys (`check` throws a v.ValidationError). */
function withCheck<T>(validate: v.Validator<T>, check: (parsed: T, path: string) => void): v.Validator<T> {
  return (value, path) => {
    const parsed = validate(value, path);
    check(parsed, path);
    return parsed;
  };
}

/** The validator of each output type: `type`, the common keys and the type's own. */
const outputValidators = {
  http: withBatchSize(
    v.object({ type: v.required(v.oneOf(["http"])), ...commonShape, ...typeShapes.http }, REJECT_UNKNOWN),
  ),
  file: withBatchSize(
    v.object({ type: v.required(v.oneOf(["file"])), ...commonShape, ...typeShapes.file }, REJECT_UNKNOWN),
  ),
  "prometheus-remote-write": withBatchSize(
    v.object(
      {
        type: v.required(v.oneOf(["prometheus-remote-write"])),
        ...commonShape,
        ...typeShapes["prometheus-remote-write"],
      },
      REJECT_UNKNOWN,
    ),
  ),
  alertmanager: withBatchSize(
    v.object(
      { type: v.required(v.oneOf(["alertmanager"])), ...commonShape, ...typeShapes.alertmanager },
      REJECT_UNKNOWN,
    ),
  ),
  loki: withBatchSize(
    withSecretSources(
      withCheck(
        v.object({ type: v.required(v.oneOf(["loki"])), ...commonShape, ...typeShapes.loki }, REJECT_UNKNOWN),
        checkCredentials,
      ),
      LOKI_SECRETS,
    ),
  ),
  elasticsearch: withBatchSize(
    withSecretSources(
      withCheck(
        v.object(
          { type: v.required(v.oneOf(["elasticsearch"])), ...commonShape, ...typeShapes.elasticsearch },
          REJECT_UNKNOWN,
        ),
        checkCredentials,
      ),
      ELASTICSEARCH_SECRETS,
    ),
  ),
  influxdb: withBatchSize(
    withSecretSources(
      withCheck(
        v.object({ type: v.required(v.oneOf(["influxdb"])), ...commonShape, ...typeShapes.influxdb }, REJECT_UNKNOWN),
        (definition, path) => {
          checkInfluxdbTarget(definition, path);
          checkCredentials(definition, path);
        },
      ),
      INFLUXDB_SECRETS,
    ),
  ),
  graphite: withBatchSize(
    v.object({ type: v.required(v.oneOf(["graphite"])), ...commonShape, ...typeShapes.graphite }, REJECT_UNKNOWN),
  ),
  email: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["email"])), ...commonShape, ...typeShapes.email }, REJECT_UNKNOWN),
      EMAIL_SECRETS,
    ),
  ),
  slack: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["slack"])), ...commonShape, ...typeShapes.slack }, REJECT_UNKNOWN),
      SLACK_SECRETS,
    ),
  ),
  discord: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["discord"])), ...commonShape, ...typeShapes.discord }, REJECT_UNKNOWN),
      DISCORD_SECRETS,
    ),
  ),
  telegram: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["telegram"])), ...commonShape, ...typeShapes.telegram }, REJECT_UNKNOWN),
      TELEGRAM_SECRETS,
    ),
  ),
  ntfy: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["ntfy"])), ...commonShape, ...typeShapes.ntfy }, REJECT_UNKNOWN),
      NTFY_SECRETS,
    ),
  ),
  matrix: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["matrix"])), ...commonShape, ...typeShapes.matrix }, REJECT_UNKNOWN),
      MATRIX_SECRETS,
    ),
  ),
  pagerduty: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["pagerduty"])), ...commonShape, ...typeShapes.pagerduty }, REJECT_UNKNOWN),
      PAGERDUTY_SECRETS,
    ),
  ),
  webhook: withBatchSize(
    withSecretSources(
      v.object({ type: v.required(v.oneOf(["webhook"])), ...commonShape, ...typeShapes.webhook }, REJECT_UNKNOWN),
      WEBHOOK_SECRETS,
    ),
  ),
} satisfies Record<OutputType, v.Validator<unknown>>;

/** A declared output, defaults filled in (durations as {@link Duration}, in milliseconds). */
export type OutputDefinition = v.Infer<(typeof outputValidators)[OutputType]>;

const typeRule = `must be one of ${OUTPUT_TYPES.join(", ")}`;

function isOutputType(value: unknown): value is OutputType {
  return typeof value === "string" && OUTPUT_TYPES.some((type) => type === value);
}

/** One output: `type` first, then the keys of that type. */
const outputDefinition: v.Validator<OutputDefinition> = (value, path) => {
  // The value is not echoed: an output written as a string may be a URL with a password.
  if (!v.isPlainObject(value)) throw new v.ValidationError(path, "must be a map with a type");
  if (!isOutputType(value.type)) throw new v.ValidationError(v.childPath(path, "type"), typeRule, value.type);
  return outputValidators[value.type](value, path);
};

/** Output names: 1–128 characters of `A-Z a-z 0-9 . _ -` (the rule of stream names). */
const OUTPUT_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/** A map of output names to their definitions: `outputs:` and `streams.outputs`. */
export const outputsSection: v.Validator<Readonly<Record<string, OutputDefinition>>> = (value, path) => {
  // The value is not echoed: it may hold URLs or headers with secrets.
  if (!v.isPlainObject(value)) throw new v.ValidationError(path, "must be a map from name to definition");
  const result: Record<string, OutputDefinition> = {};
  for (const [name, item] of Object.entries(value)) {
    const where = v.childPath(path, name);
    if (!OUTPUT_NAME.test(name))
      throw new v.ValidationError(where, "the name must be 1 to 128 characters of A-Z a-z 0-9 . _ -");
    result[name] = outputDefinition(item, where);
  }
  return result;
};

/**
 * Lets each secret key of `keys` (`token`) come from `<key>-env: VARIABLE` (read from
 * `environment` when the configuration is validated) or `<key>-file: PATH` (a systemd credential,
 * a container secret) instead of the configuration file; one of the three at most. The value is
 * then checked by `validate` as if written in the file, and never echoed in an error.
 * @throws v.ValidationError naming `<key>-env` when the variable is not set, `<key>-file` when the
 *   file cannot be read, `<key>` when more than one source is given
 */
export function withSecretSources<T>(
  validate: v.Validator<T>,
  keys: readonly string[],
  environment: Readonly<Record<string, string | undefined>> = process.env,
): v.Validator<T> {
  return (value, path) => {
    if (!v.isPlainObject(value)) return validate(value, path);
    const copy: Record<string, unknown> = { ...value };
    for (const key of keys) {
      const fromEnvironment = copy[`${key}-env`];
      const fromFile = copy[`${key}-file`];
      delete copy[`${key}-env`];
      delete copy[`${key}-file`];
      const sources = [key in value, fromEnvironment !== undefined, fromFile !== undefined].filter(Boolean).length;
      if (sources > 1) {
        throw new v.ValidationError(v.childPath(path, key), `takes one of ${key}, ${key}-env and ${key}-file`);
      }
      if (fromEnvironment !== undefined) {
        const where = v.childPath(path, `${key}-env`);
        const variable = v.string({ min: 1 })(fromEnvironment, where);
        const secret = environment[variable];
        if (secret === undefined || secret === "") {
          throw new v.ValidationError(where, `names the environment variable ${variable}, which is not set`);
        }
        copy[key] = secret;
      }
      if (fromFile !== undefined)
        copy[key] = secretFile(v.string({ min: 1 }))(fromFile, v.childPath(path, `${key}-file`));
    }
    return validate(copy, path);
  };
}
