/**
 * What a module is: one Fastify plugin, its configuration section, its environment overrides and
 * its migrations (platform.md §7). `src/server.ts` lists the modules; each is enabled by
 * `<module>.enabled`.
 */
import type { FastifyBaseLogger, FastifyPluginAsync } from "fastify";
import type { Migration } from "kysely";
import type { Registry } from "prom-client";
import type { Auth } from "./auth.js";
import type { ModuleSection, VigieConfig } from "./config.js";
import type { Database } from "./database.js";
import type { Lifecycle } from "./lifecycle.js";
import type { Shape } from "./validation.js";

/** What the platform hands every module. */
export interface ModuleContext {
  /** The whole validated configuration (modules read `security`, `http` from it). */
  readonly config: VigieConfig;
  readonly database: Database;
  /** The server's metrics registry; a module registers its own metrics here. */
  readonly metrics: Registry;
  readonly auth: Auth;
  readonly lifecycle: Lifecycle;
  readonly logger: FastifyBaseLogger;
}

/** The options a module's plugin receives. */
export interface ModuleOptions<S extends Shape = Shape> {
  readonly context: ModuleContext;
  /** The module's own section of the configuration, defaults filled in. */
  readonly section: ModuleSection<S>;
}

/** A module of Vigie. */
export interface VigieModule<S extends Shape = Shape> {
  /** The configuration section and metric prefix: `comments`, `streams`, ... */
  readonly name: string;
  /** The keys of the module's configuration section besides `enabled`. */
  readonly configShape: S;
  /** Environment variables overriding keys of the section: `{VIGIE_X: "challenge.secret"}`. */
  readonly environment?: Readonly<Record<string, string>>;
  /** Migrations by unique name `<module>-<4-digit number>-<what>`; run even when disabled. */
  readonly migrations: Readonly<Record<string, Migration>>;
  /** Registers the module's routes; called only when the module is enabled. */
  readonly plugin: FastifyPluginAsync<ModuleOptions<S>>;
}

/** Declares a module, inferring the type of its configuration section. */
export function defineModule<S extends Shape>(module: VigieModule<S>): VigieModule<S> {
  return module;
}

/** A module of any configuration shape, for lists of modules (plugin options are contravariant). */
// biome-ignore lint/suspicious/noExplicitAny: each module has its own configuration shape
export type AnyModule = VigieModule<any>;
