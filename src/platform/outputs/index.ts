/**
 * The platform's outputs, built once per server (docs/outputs.md): every output declared under
 * `outputs:` and by modules (`streams.outputs`), their metrics, and the {@link OutputNotifier}
 * that modules hand notifications to.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Registry } from "prom-client";
import type { NatsLink } from "../cluster/index.js";
import { ConfigError, configErrorMessage, type VigieConfig } from "../config.js";
import type { Database } from "../database.js";
import type { AnyModule } from "../module.js";
import { sectionOf } from "../module.js";
import { ValidationError } from "../validation.js";
import { checkOutputFiles, type OutputDefinition } from "./config.js";
import { SqlDurableStore } from "./durable-storage.js";
import { SmtpMailer } from "./mail-queue.js";
import { outputMetrics } from "./metrics.js";
import { OutputNotifier } from "./notifier.js";
import { Outputs } from "./outputs.js";

/** Output types that keep one event per notification (PagerDuty groups alerts itself). */
const UNGROUPED_TYPES: ReadonlySet<string> = new Set(["pagerduty"]);

/** The outputs of a server and the notifier on top of them. */
export interface PlatformOutputs {
  readonly outputs: Outputs;
  readonly notifier: OutputNotifier;
  /** Mail of modules to recipients they choose, through the `email` outputs' SMTP settings. */
  readonly mailer: SmtpMailer;
  /** Graceful stop: pending groups are sent, queues drained for `drain-timeout`, what is left dropped. */
  close(): Promise<void>;
}

/**
 * Each output's queued events with the messages its mailer queue holds added (an `email` output
 * sends both notifications and the mail of modules).
 */
function* withMail(
  queued: Iterable<readonly [string, number]>,
  mailer: SmtpMailer,
): Iterable<readonly [string, number]> {
  for (const [name, count] of queued) yield [name, count + mailer.queued(name)] as const;
}

/**
 * Every declared output by the section that declares it: `outputs` for the top-level ones,
 * `streams.outputs` for a module's (a name in both is refused when the configuration is validated).
 */
export function declaredOutputs(
  config: VigieConfig,
  modules: readonly AnyModule[],
): Map<string, Readonly<Record<string, OutputDefinition>>> {
  const sources = new Map<string, Readonly<Record<string, OutputDefinition>>>([["outputs", config.outputs]]);
  for (const module of modules) {
    const section = sectionOf(config, module);
    if (section !== undefined && module.outputs !== undefined)
      sources.set(`${module.name}.outputs`, module.outputs(section));
  }
  return sources;
}

/**
 * Builds the outputs (nothing is contacted before something is sent) and the notifier; durable
 * outputs take back the events their previous run kept in `database`, or, in cluster mode
 * (`nats` given), their JetStream streams.
 * @throws ConfigError when the directory of a `file` output does not exist
 * @throws the database's or JetStream's error when the durable queues cannot be read
 */
export async function createOutputs(
  config: VigieConfig,
  modules: readonly AnyModule[],
  metrics: Registry,
  logger: FastifyBaseLogger,
  database: Database,
  nats?: NatsLink,
): Promise<PlatformOutputs> {
  const definitions: Record<string, OutputDefinition> = {};
  for (const [section, declared] of declaredOutputs(config, modules)) {
    try {
      checkOutputFiles(declared, section);
    } catch (error) {
      if (error instanceof ValidationError) throw new ConfigError(configErrorMessage(error));
      throw error;
    }
    Object.assign(definitions, declared);
  }
  let notifier: OutputNotifier | undefined;
  const counted = outputMetrics(
    metrics,
    () => withMail(outputs.queued(), mailer),
    () => outputs.stored(),
  );
  const mailer = new SmtpMailer(definitions, logger, { metrics: counted });
  const outputs: Outputs = new Outputs(definitions, {
    metrics: counted,
    logger,
    store: new SqlDurableStore(database.kysely),
    ...(nats === undefined ? {} : { nats }),
    publicUrl: config.http["public-url"],
    settled: (batch, start, end, outcome, reason) => notifier?.settled(batch, start, end, outcome, reason),
    beforeDrain: () => notifier?.flush(),
  });
  const grouping = config.notifications;
  notifier = new OutputNotifier(
    outputs,
    { threshold: grouping["group-threshold"], waitMs: grouping["group-wait"].milliseconds },
    (output) => !UNGROUPED_TYPES.has(definitions[output]?.type ?? ""),
  );
  const built = notifier;
  await outputs.restore();
  return {
    outputs,
    notifier: built,
    mailer,
    async close() {
      const timeout = config["drain-timeout"].milliseconds;
      await Promise.all([outputs.drain(timeout), mailer.close(timeout)]);
      built.close();
    },
  };
}
