/**
 * The routes of the registry (registry.md §2–3) and its start-up: the token verifier registered
 * with the platform, the auth metric, the bootstrap admin.
 */
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Principal } from "../platform/auth.js";
import { HttpError } from "../platform/errors.js";
import type { ModuleOptions } from "../platform/module.js";
import { optional, ValidationError } from "../platform/validation.js";
import { type BootstrapAdmin, createBootstrapAdmin } from "./bootstrap.js";
import { LastUsedRecorder } from "./last-used.js";
import { countAuthOutcomes } from "./metrics.js";
import { dummyPasswordHash, hashPassword, verifyPassword } from "./passwords.js";
import { FailureLimiter, type RateLimitPolicy } from "./rate-limit.js";
import { TokenCache } from "./token-cache.js";
import { newTokenBody, TokenStore, tokenView } from "./tokens.js";
import {
  newUserBody,
  setsAdminOnlyField,
  type User,
  UserStore,
  userName,
  userNotFound,
  userUpdateBody,
} from "./users.js";
import { RegistryVerifier } from "./verifier.js";

/** What the registry plugin needs besides the platform context. */
export interface RegistryPluginOptions {
  /** The admin to create at start-up when absent (from `VIGIE_ADMIN_NAME`/`VIGIE_ADMIN_PASSWORD`). */
  readonly bootstrapAdmin?: BootstrapAdmin;
  /** The clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** How long a token lookup is cached in this process, in milliseconds. */
  readonly cacheTtlMs: number;
  /** The rate limit of failed token creations. */
  readonly failurePolicy: RateLimitPolicy;
}

const OK = { ok: true } as const;
const USERS = "/api/v1/registry/user";
const TOKENS = "/api/v1/registry/token";

/** The caller set by a guard; a route without a guard has none. */
function principalOf(request: FastifyRequest): Principal {
  const { principal } = request;
  if (principal === undefined) throw new Error("route reached without an authenticated principal");
  return principal;
}

const queryUser = optional(userName);

/**
 * Builds the registry's Fastify plugin. At registration it registers the token verifier with
 * `context.auth`, the `registry_auth_total` metric, and creates the bootstrap admin when asked;
 * then it serves:
 *
 * - POST/GET `/api/v1/registry/user` (admin), POST `/api/v1/registry/user/:name` (admin, or the
 *   user itself for description and password), DELETE `/api/v1/registry/user/:name` (admin);
 * - POST `/api/v1/registry/token` (user and password, rate limited), GET `/api/v1/registry/token`
 *   and DELETE `/api/v1/registry/token/:name` (own tokens; an admin's with `?user=<name>`).
 *
 * Errors are HttpErrors and ValidationErrors, answered by the platform's error handler.
 */
export function registryPlugin(options: RegistryPluginOptions): FastifyPluginAsync<ModuleOptions> {
  const { now } = options;
  return async (app, { context }) => {
    const { auth, database, logger } = context;
    const users = new UserStore(database);
    const tokens = new TokenStore(database);
    const limiter = new FailureLimiter(database, options.failurePolicy);
    const lastUsed = new LastUsedRecorder({
      write: (tokenId, at) => tokens.touch(tokenId, at),
      onError: (error, tokenId) => logger.error({ err: error, tokenId }, "cannot record the last use of a token"),
    });
    const verifier = new RegistryVerifier({
      findOwner: (hash) => tokens.findOwner(hash),
      cache: new TokenCache({ ttlMs: options.cacheTtlMs, now }),
      lastUsed,
      now,
    });
    auth.setVerifier(verifier.verify);
    countAuthOutcomes(context.metrics, auth);
    // Computed now, so that the first attempt with an unknown user is not slower than the others.
    await dummyPasswordHash();
    if (options.bootstrapAdmin !== undefined) {
      const created = await createBootstrapAdmin(users, options.bootstrapAdmin, now());
      if (created !== undefined) logger.info({ user: created.name }, "created the admin of VIGIE_ADMIN_NAME");
    }
    app.addHook("onClose", async () => {
      await lastUsed.flush();
    });

    const requireAdmin = auth.require("admin");
    const requireUser = auth.require("tech");

    /**
     * The user whose tokens a request is about: the caller, or with `?user=<name>` another user
     * for an admin (registry.md §3).
     */
    async function tokenOwner(request: FastifyRequest): Promise<Pick<User, "id" | "name">> {
      const principal = principalOf(request);
      let name: string | undefined;
      try {
        name = queryUser((request.query as Record<string, unknown>).user, "user");
      } catch (error) {
        if (error instanceof ValidationError) throw new HttpError(400, `query parameter ${error.message}`);
        throw error;
      }
      if (name === undefined || name === principal.name) return principal;
      if (principal.role !== "admin") throw new HttpError(403, "forbidden");
      const user = await users.find(name);
      if (user === undefined) throw userNotFound(name);
      return user;
    }

    app.post(USERS, { preHandler: requireAdmin }, async (request, reply) => {
      const body = newUserBody(request.body, "");
      const passwordHash = await hashPassword(body.password);
      await users.create(
        { name: body.name, description: body.description, role: body.role, active: body.active, passwordHash },
        now(),
      );
      return reply.code(201).send(OK);
    });

    app.get(USERS, { preHandler: requireAdmin }, async () => ({ users: await users.list() }));

    app.post<{ Params: { name: string } }>(`${USERS}/:name`, { preHandler: requireUser }, async (request) => {
      const principal = principalOf(request);
      const { name } = request.params;
      const admin = principal.role === "admin";
      if (!admin && principal.name !== name) throw new HttpError(403, "forbidden");
      if (!admin && setsAdminOnlyField(request.body)) throw new HttpError(403, "only admins can change role or active");
      const changes = userUpdateBody(request.body, "");
      const passwordHash = changes.password === undefined ? undefined : await hashPassword(changes.password);
      const user = await users.update(
        name,
        {
          ...(changes.description === undefined ? {} : { description: changes.description }),
          ...(passwordHash === undefined ? {} : { passwordHash }),
          ...(changes.role === undefined ? {} : { role: changes.role }),
          ...(changes.active === undefined ? {} : { active: changes.active }),
        },
        now(),
      );
      verifier.invalidateUser(user.id);
      return OK;
    });

    app.delete<{ Params: { name: string } }>(`${USERS}/:name`, { preHandler: requireAdmin }, async (request) => {
      const user = await users.delete(request.params.name);
      verifier.invalidateUser(user.id);
      return OK;
    });

    app.post(TOKENS, async (request, reply) => {
      const body = newTokenBody(request.body, "");
      const keys = [`user:${body.user}`, `address:${request.ip}`];
      // Checked before the password, so a limited attacker gets no answer about it.
      const wait = await limiter.check(keys, now());
      if (wait !== undefined) {
        throw new HttpError(429, `too many failed attempts, retry in ${wait} seconds`, { "retry-after": String(wait) });
      }
      const user = await users.findCredentials(body.user);
      // An unknown user costs the same Argon2 verification as a wrong password (same timing).
      const matches = await verifyPassword(user?.passwordHash ?? (await dummyPasswordHash()), body.password);
      if (user === undefined || !matches) {
        await limiter.record(keys, now());
        throw new HttpError(401, "invalid user or password");
      }
      if (!user.active) throw new HttpError(403, "user is not active");
      const { token } = await tokens.create(user.id, body.name, body.validity, now());
      return reply.code(201).send({ token });
    });

    app.get(TOKENS, { preHandler: requireUser }, async (request) => {
      const owner = await tokenOwner(request);
      return { tokens: (await tokens.list(owner.id)).map(tokenView) };
    });

    app.delete<{ Params: { name: string } }>(`${TOKENS}/:name`, { preHandler: requireUser }, async (request) => {
      const owner = await tokenOwner(request);
      const deleted = await tokens.delete(owner.id, request.params.name);
      verifier.invalidateToken(deleted.id);
      return OK;
    });
  };
}
