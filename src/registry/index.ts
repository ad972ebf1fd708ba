/**
 * The registry module (docs/registry.md): users, roles and API tokens. Its tokens also guard the admin
 * APIs of the other modules, through the verifier it registers with the platform's auth hook.
 *
 * Configuration: `registry: {enabled: true, cargo: {…}, sign-in: {…}, streams: […]}` (see cargo/config.ts and
 * sign-in-limit.ts). Environment: `VIGIE_ADMIN_NAME` and
 * `VIGIE_ADMIN_PASSWORD` create the first admin at start-up.
 */
import { defineModule, type VigieModule } from "../platform/module.js";
import { bootstrapAdminFrom, createBootstrapAdmin } from "./bootstrap.js";
import { cargoMigrations, checkCargoPublicUrl, crateStorage, setUpCargo, setUpCargoMirror } from "./cargo/index.js";
import { registryCommands } from "./commands.js";
import { registryShape } from "./config.js";
import { LastUsedRecorder } from "./last-used.js";
import { countAuthOutcomes } from "./metrics.js";
import { dummyPasswordHash } from "./passwords.js";
import { registerRegistryRoutes } from "./routes.js";
import { SignInLimiter, type SignInLimits, signInLimitsOf } from "./sign-in-limit.js";
import { FailureLimiter, registryMigrations, TokenStore, UserStore } from "./storage.js";
import { TokenCache } from "./token-cache.js";
import { isInvalidation, RegistryVerifier } from "./verifier.js";

export { registryMigrations } from "./storage.js";

/** The change topic of token and user invalidations between instances. */
const REGISTRY_TOPIC = "registry.tokens";

/** Options of {@link createRegistryModule}; the defaults are those of production. */
export interface RegistryModuleOptions {
  /** Where `VIGIE_ADMIN_NAME` and `VIGIE_ADMIN_PASSWORD` are read at start-up; default `process.env`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The clock, milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** How long this process trusts a token lookup, in milliseconds; default 5000, 0 disables the cache. */
  readonly cacheTtlMs?: number;
  /**
   * The rate limit of failed token creations, instead of the one of `registry.sign-in` (default 10
   * per 15 minutes per address, 10 per user, then 1 per user and address; see sign-in-limit.ts).
   */
  readonly signInLimits?: SignInLimits;
}

/**
 * Builds the registry module. At start-up its plugin registers the token verifier with the
 * platform's `auth`, the `registry_auth_total` metric, creates the bootstrap admin when asked, then
 * serves the routes of routes.ts. Tests pass their own environment and clock.
 *
 * @throws ConfigError at start-up (from the plugin) when `VIGIE_ADMIN_NAME`/`VIGIE_ADMIN_PASSWORD`
 *   are invalid or only one is set
 */
export function createRegistryModule(options: RegistryModuleOptions = {}): VigieModule<typeof registryShape> {
  const now = options.now ?? Date.now;
  return defineModule({
    name: "registry",
    configShape: registryShape,
    migrations: { ...registryMigrations, ...cargoMigrations },
    check: (section, platform) => checkCargoPublicUrl(section.cargo, platform),
    links: (section) => [
      { title: "registry API (users and tokens)", path: "/api/v1/registry/token" },
      {
        title: "Cargo registry index (for cargo: sparse+ this address)",
        path: "/api/v1/cargo/index/",
        ...(section.cargo.enabled ? {} : { enableWith: "registry.cargo.enabled: true" }),
      },
      {
        title: "Cargo mirror of crates.io (for cargo: sparse+ this address)",
        path: "/api/v1/mirror/index/",
        ...(section.cargo.mirror.enabled ? {} : { enableWith: "registry.cargo.mirror.enabled: true" }),
      },
    ],
    commands: registryCommands,
    plugin: async (app, { context, section }) => {
      const bootstrapAdmin = bootstrapAdminFrom(options.environment ?? process.env);
      const { auth, database, logger } = context;
      const users = new UserStore(database);
      const limits = options.signInLimits ?? signInLimitsOf(section["sign-in"]);
      const tokens = new TokenStore(database);
      const lastUsed = new LastUsedRecorder({
        write: (tokenId, at) => tokens.touch(tokenId, at),
        onError: (error, tokenId) => logger.error({ err: error, tokenId }, "cannot record the last use of a token"),
      });
      const verifier = new RegistryVerifier({
        findOwner: (hash) => tokens.findOwner(hash),
        cache: new TokenCache({ ttlMs: options.cacheTtlMs ?? 5_000, now }),
        lastUsed,
        now,
      });
      auth.setVerifier(verifier.verify);
      const cluster = context.cluster;
      if (cluster !== undefined) {
        // A token revoked or a user deactivated here is refused everywhere within a second
        // (docs/cluster.md), not after the cache's TTL.
        verifier.onInvalidate = (change) => void cluster.changes.publish(REGISTRY_TOPIC, change);
        cluster.changes.on(REGISTRY_TOPIC, (change) => verifier.forget(isInvalidation(change) ? change : "all"));
        cluster.changes.onResync(() => verifier.forget("all"));
      }
      countAuthOutcomes(context.metrics, auth);
      // Computed before the first request, so that the first attempt with an unknown user is not
      // slower than the others; on libuv's thread pool while the other modules start, not before
      // them (tens of milliseconds of start-up). A failure fails the start (onReady), as before.
      const dummy = dummyPasswordHash();
      dummy.catch(() => {}); // handled by the hook below, not an unhandled rejection meanwhile
      app.addHook("onReady", async () => {
        await dummy;
      });
      if (bootstrapAdmin !== undefined) {
        const created = await createBootstrapAdmin(users, bootstrapAdmin, now());
        if (created !== undefined) logger.info({ user: created.name }, "created the admin of VIGIE_ADMIN_NAME");
      }
      app.addHook("onClose", async () => {
        await lastUsed.flush();
      });
      registerRegistryRoutes(app, {
        users,
        tokens,
        limiter: new SignInLimiter(new FailureLimiter(database, SignInLimiter.keepMs(limits)), limits),
        verifier,
        requireAdmin: auth.require("admin"),
        requireUser: auth.require("tech"),
        now,
      });
      if (section.cargo.enabled) await setUpCargo(app, context, section.cargo, users, section.streams, now);
      if (section.cargo.mirror.enabled) {
        const storage = crateStorage(section.cargo, context.database.dataDirectory);
        await setUpCargoMirror(app, context, section.cargo, storage, now);
      }
    },
  });
}

/** The registry module as the server loads it. */
export const registryModule = createRegistryModule();
