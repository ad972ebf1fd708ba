/**
 * The registry module (registry.md): users, roles and API tokens. Its tokens also guard the admin
 * APIs of the other modules, through the verifier it registers with the platform's auth hook.
 *
 * Configuration: `registry: {enabled: true}`; no other key. Environment: `VIGIE_ADMIN_NAME` and
 * `VIGIE_ADMIN_PASSWORD` create the first admin at start-up (registry.md §4).
 */
import { defineModule, type VigieModule } from "../platform/module.js";
import { bootstrapAdminFrom } from "./bootstrap.js";
import { registryMigrations } from "./migrations.js";
import { registryPlugin } from "./plugin.js";
import { type RateLimitPolicy, TOKEN_FAILURE_POLICY } from "./rate-limit.js";

export { registryMigrations } from "./migrations.js";
export { hashPassword } from "./passwords.js";
export { UserStore, userDescription, userName, userPassword, userRole } from "./users.js";

/** Options of {@link createRegistryModule}; the defaults are those of production. */
export interface RegistryModuleOptions {
  /** Where `VIGIE_ADMIN_NAME` and `VIGIE_ADMIN_PASSWORD` are read at start-up; default `process.env`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The clock, milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** How long this process trusts a token lookup, in milliseconds; default 5000, 0 disables the cache. */
  readonly cacheTtlMs?: number;
  /** The rate limit of failed token creations; default 10 per 15 minutes. */
  readonly failurePolicy?: RateLimitPolicy;
}

/**
 * Builds the registry module. Tests pass their own environment and clock.
 *
 * @throws ConfigError at start-up (from the plugin) when `VIGIE_ADMIN_NAME`/`VIGIE_ADMIN_PASSWORD`
 *   are invalid or only one is set
 */
export function createRegistryModule(options: RegistryModuleOptions = {}): VigieModule<Record<never, never>> {
  return defineModule({
    name: "registry",
    configShape: {},
    migrations: registryMigrations,
    plugin: async (app, moduleOptions) => {
      const bootstrapAdmin = bootstrapAdminFrom(options.environment ?? process.env);
      await registryPlugin({
        now: options.now ?? Date.now,
        cacheTtlMs: options.cacheTtlMs ?? 5_000,
        failurePolicy: options.failurePolicy ?? TOKEN_FAILURE_POLICY,
        ...(bootstrapAdmin === undefined ? {} : { bootstrapAdmin }),
      })(app, moduleOptions);
    },
  });
}

/** The registry module as the server loads it. */
export const registryModule = createRegistryModule();
