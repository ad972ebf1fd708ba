/**
 * What a module is: one Fastify plugin, its configuration section, its environment overrides and
 * its migrations (CONTRIBUTING.md). `src/server.ts` lists the modules; each is enabled by
 * `<module>.enabled`.
 *
 * Every module has the same files: `index.ts` (this definition and what the CLI may use),
 * `routes.ts` or `routes/` (Fastify routes only), `storage.ts` (its tables, migrations and queries;
 * nothing else touches them), `metrics.ts`, `config.ts` when its section is long, and domain files
 * without Fastify or SQL.
 */
import type { Command } from "commander";
import type { FastifyBaseLogger, FastifyPluginAsync, preHandlerHookHandler } from "fastify";
import type { Migration } from "kysely";
import type { Registry } from "prom-client";
import type { Auth } from "./auth.js";
import type { Cluster } from "./cluster/index.js";
import type { ModuleSection, PlatformConfig, VigieConfig } from "./config.js";
import type { Database } from "./database.js";
import type { EventRouter } from "./events.js";
import type { Mailer } from "./mailer.js";
import type { Exposition } from "./metrics.js";
import type { Notifier } from "./notifications.js";
import type { OutputDefinition } from "./outputs/config.js";
import type { Outputs } from "./outputs/outputs.js";
import type { Shape } from "./validation.js";

/** What the platform hands every module. */
export interface ModuleContext {
  /** The whole validated configuration (modules read `security`, `http` from it). */
  readonly config: VigieConfig;
  readonly database: Database;
  /** The server's metrics registry; a module registers its own prom-client metrics here. */
  readonly metrics: Registry;
  /** Where a module appends exposition text it renders itself to `GET /metrics`. */
  readonly exposition: Exposition;
  readonly auth: Auth;
  /**
   * The guard of the APIs that `security.require-token` closes (healthchecks, streams;
   * docs/security.md): a registry token of an active `tech` or `admin` user. `undefined` while they
   * are open.
   */
  readonly apiGuard: preHandlerHookHandler | undefined;
  readonly logger: FastifyBaseLogger;
  /**
   * Events between modules: producers push into it; the streams module connects its engine to it.
   */
  readonly events: EventRouter;
  /** Every declared output (`outputs:` and the modules' own), for streams' `output` action. */
  readonly outputs: Outputs;
  /** Notifications to the declared outputs (docs/notifications.md), whatever module runs them. */
  readonly notifier: Notifier;
  /** E-mail to recipients a module chooses, through a declared `email` output (platform/mailer.ts). */
  readonly mailer: Mailer;
  /**
   * This instance's place among several (docs/cluster.md), with `cluster.enabled`; `undefined` for a
   * single instance. Modules take their leases and change topics from it.
   */
  readonly cluster: Cluster | undefined;
}

/** Re-applies the reloadable part of a module's section (on SIGHUP). */
export type SectionReload<S extends Shape> = (section: ModuleSection<S>) => void | Promise<void>;

/** The options a module's plugin receives. */
export interface ModuleOptions<S extends Shape = Shape> {
  readonly context: ModuleContext;
  /** The module's own section of the configuration, defaults filled in. */
  readonly section: ModuleSection<S>;
  /**
   * Registers what a SIGHUP re-applies: `handler` receives the module's section of the re-read,
   * validated configuration. An invalid file never reaches it; a handler that throws is logged and
   * the other modules reload anyway.
   */
  readonly onReload: (handler: SectionReload<S>) => void;
}

/**
 * A place a module serves that a person would open or point a client at, listed by `GET /` and in
 * the start-up log.
 */
export interface ModuleLink {
  /** What is there, for people: `status page`, `stream API`. */
  readonly title: string;
  /** The path under `http.public-url` (`/status`), or a full address for another port (`tcp://…`). */
  readonly path: string;
  /**
   * `undefined` when it is served; else the configuration that would serve it
   * (`healthchecks.status-page.enabled: true`).
   */
  readonly enableWith?: string;
}

/** Exit codes of the `vigie` command: 0 success, 1 failure, 2 usage (invalid options or configuration). */
export type ExitCode = 0 | 1 | 2;

/** What the `vigie` command gives the commands a module adds. */
export interface CliContext<S extends Shape = Shape> {
  /**
   * The validated configuration of `file` (else `$VIGIE_CONFIG`, else the defaults) and the
   * module's section of it; writes the error and exits 2 when it is invalid.
   */
  readonly load: (file: string | undefined) => Promise<{ config: VigieConfig; section: ModuleSection<S> | undefined }>;
  /** The configured database with every migration run; writes the error and exits 1 when it cannot. */
  readonly openDatabase: (config: VigieConfig) => Promise<Database>;
  /** Writes `vigie: <message>` to standard error and exits with `code`. */
  readonly fail: (message: string, code: ExitCode) => never;
}

/** A secret `vigie init` generates: the `-file` key that names it, and the name of its file. */
export interface GeneratedSecret {
  readonly key: string;
  readonly file: string;
}

/** A module of Vigie. */
export interface VigieModule<S extends Shape = Shape> {
  /** The configuration section and metric prefix: `comments`, `streams`, ... */
  readonly name: string;
  /** The keys of the module's configuration section besides `enabled`. */
  readonly configShape: S;
  /** Environment variables overriding keys of the section: `{VIGIE_X: "challenge.secret"}`. */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Rules that tie the section to the platform keys (`security.require-token`), run by
   * `parseConfig` after every section validated, so `vigie config check` reports them too.
   * `outputs` are the names of every declared output (`outputs:` and the modules' own).
   * @throws ValidationError naming the key of the section (`streams.riemann.tls-ca`)
   */
  readonly check?: (section: ModuleSection<S>, platform: PlatformConfig, outputs: ReadonlySet<string>) => void;
  /**
   * The secrets `vigie init` generates for the module: each is written to `secrets/<file>` of the
   * directory (mode 0600) and named by `key`, a `-file` key of the section (`challenge.secret-file`).
   */
  readonly generatedSecrets?: readonly GeneratedSecret[];
  /**
   * Outputs the module's section declares (`streams.outputs`), merged with the top-level
   * `outputs:`; a name in both is a configuration error. Read whether the module is enabled or not.
   */
  readonly outputs?: (section: ModuleSection<S>) => Readonly<Record<string, OutputDefinition>>;
  /** Migrations by unique name `<module>-<4-digit number>-<what>`; run even when disabled. */
  readonly migrations: Readonly<Record<string, Migration>>;
  /**
   * What the module serves, from its section (enabled or not; when the module is disabled the
   * platform marks every link as needing `<name>.enabled: true`).
   */
  readonly links?: (section: ModuleSection<S>) => readonly ModuleLink[];
  /**
   * Adds the module's subcommands to the `vigie` command (`vigie user create`); every command
   * takes `-c, --config <file>`. Called whether the module is enabled or not.
   */
  readonly commands?: (program: Command, cli: CliContext<S>) => void;
  /** Registers the module's routes; called only when the module is enabled. */
  readonly plugin: FastifyPluginAsync<ModuleOptions<S>>;
}

/** Declares a module, inferring the type of its configuration section. */
export function defineModule<S extends Shape>(module: VigieModule<S>): VigieModule<S> {
  return module;
}

/**
 * The section of `module` in a validated configuration, typed by the module's shape; `undefined`
 * when the configuration was validated without that module. Sound because `parseConfig` validated
 * each section with the shape of its module.
 */
export function sectionOf<S extends Shape>(config: VigieConfig, module: VigieModule<S>): ModuleSection<S> | undefined {
  // biome-ignore lint/suspicious/noExplicitAny: the section's type is the module's, which parseConfig checked
  const sections: Readonly<Record<string, ModuleSection<any> | undefined>> = config.modules;
  return sections[module.name];
}

/** A module of any configuration shape, for lists of modules (plugin options are contravariant). */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own configuration shape
export type AnyModule = VigieModule<any>;
