/**
 * The routes of the registry (docs/registry.md): users (admin, or a user for its own description
 * and password) and tokens (created with the user's password, rate limited; listed and deleted by
 * their owner, or by an admin with `?user=<name>`). A token may be created with Cargo `scopes` and
 * `crates` (docs/cargo.md); such a token is refused by every guard here (the guards are created
 * without `scoped`), so it cannot manage users or tokens. Errors are catalogue errors and
 * ValidationErrors, answered by the platform's error handler.
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from "fastify";
import type { Principal } from "../platform/auth.js";
import { ForbiddenError, RateLimitedError, UnauthorizedError } from "../platform/errors.js";
import { type Query, queryError, queryOf, queryString } from "../platform/query.js";
import { ValidationError } from "../platform/validation.js";
import { dummyPasswordHash, hashPassword, verifyPassword } from "./passwords.js";
import {
  CREATE_TOKEN,
  CREATE_USER,
  DELETE_TOKEN,
  DELETE_USER,
  LIST_TOKENS,
  LIST_USERS,
  UPDATE_USER,
} from "./routes-api.js";
import type { SignInLimiter } from "./sign-in-limit.js";
import type { TokenStore, UserStore } from "./storage.js";
import { newTokenBody, tokenView } from "./tokens.js";
import { newUserBody, setsAdminOnlyField, type User, userName, userNotFound, userUpdateBody } from "./users.js";
import type { RegistryVerifier } from "./verifier.js";

/** What the routes work with. */
export interface RegistryRoutesOptions {
  readonly users: UserStore;
  readonly tokens: TokenStore;
  /** The rate limit of failed token creations (sign-in-limit.ts). */
  readonly limiter: SignInLimiter;
  readonly verifier: RegistryVerifier;
  /** Guards of the routes for admins only, and for any active user. */
  readonly requireAdmin: preHandlerHookHandler;
  readonly requireUser: preHandlerHookHandler;
  /** The clock, milliseconds since the epoch. */
  readonly now: () => number;
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

/**
 * The `user` query parameter, a user name, or `undefined` when absent.
 * @throws InvalidError `query parameter user: <rule>` (`must be a string` when repeated)
 */
function userParameter(query: Query): string | undefined {
  const name = queryString(query, "user", "must be a string");
  if (name === undefined) return undefined;
  try {
    return userName(name, "user");
  } catch (error) {
    if (error instanceof ValidationError) throw queryError("user", error.rule);
    throw error;
  }
}

/**
 * Registers POST/GET `/api/v1/registry/user`, POST/DELETE `/api/v1/registry/user/:name`, POST/GET
 * `/api/v1/registry/token` and DELETE `/api/v1/registry/token/:name`.
 */
export function registerRegistryRoutes(app: FastifyInstance, options: RegistryRoutesOptions): void {
  const { users, tokens, limiter, verifier, requireAdmin, requireUser, now } = options;

  /**
   * The user whose tokens a request is about: the caller, or with `?user=<name>` another user
   * for an admin.
   */
  async function tokenOwner(request: FastifyRequest): Promise<Pick<User, "id" | "name">> {
    const principal = principalOf(request);
    const name = userParameter(queryOf(request.query));
    if (name === undefined || name === principal.name) return principal;
    if (principal.role !== "admin") throw new ForbiddenError("forbidden");
    const user = await users.find(name);
    if (user === undefined) throw userNotFound(name);
    return user;
  }

  app.post(USERS, { preHandler: requireAdmin, config: { openapi: CREATE_USER } }, async (request, reply) => {
    const body = newUserBody(request.body, "");
    const passwordHash = await hashPassword(body.password);
    await users.create(
      { name: body.name, description: body.description, role: body.role, active: body.active, passwordHash },
      now(),
    );
    return reply.code(201).send(OK);
  });

  app.get(USERS, { preHandler: requireAdmin, config: { openapi: LIST_USERS } }, async () => ({
    users: await users.list(),
  }));

  const update = { preHandler: requireUser, config: { openapi: UPDATE_USER } };
  app.post<{ Params: { name: string } }>(`${USERS}/:name`, update, async (request) => {
    const principal = principalOf(request);
    const { name } = request.params;
    const admin = principal.role === "admin";
    if (!admin && principal.name !== name) throw new ForbiddenError("forbidden");
    if (!admin && setsAdminOnlyField(request.body)) throw new ForbiddenError("only admins can change role or active");
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

  const deleteUser = { preHandler: requireAdmin, config: { openapi: DELETE_USER } };
  app.delete<{ Params: { name: string } }>(`${USERS}/:name`, deleteUser, async (request) => {
    const user = await users.delete(request.params.name);
    verifier.invalidateUser(user.id);
    return OK;
  });

  app.post(TOKENS, { config: { openapi: CREATE_TOKEN } }, async (request, reply) => {
    const body = newTokenBody(request.body, "");
    // Checked before the password, so a limited attacker gets no answer about it.
    const wait = await limiter.refusal(body.user, request.ip, now());
    if (wait !== undefined) throw new RateLimitedError(`too many failed attempts, retry in ${wait} seconds`, wait);
    const user = await users.findCredentials(body.user);
    // An unknown user costs the same Argon2 verification as a wrong password (same timing).
    const matches = await verifyPassword(user?.passwordHash ?? (await dummyPasswordHash()), body.password);
    if (user === undefined || !matches) {
      await limiter.failed(body.user, request.ip, now());
      throw new UnauthorizedError("invalid user or password");
    }
    if (!user.active) throw new ForbiddenError("user is not active");
    const { token } = await tokens.create(user.id, body.name, body.validity, now(), {
      scopes: body.scopes,
      crates: body.crates,
    });
    return reply.code(201).send({ token });
  });

  app.get(TOKENS, { preHandler: requireUser, config: { openapi: LIST_TOKENS } }, async (request) => {
    const owner = await tokenOwner(request);
    return { tokens: (await tokens.list(owner.id)).map(tokenView) };
  });

  const deleteToken = { preHandler: requireUser, config: { openapi: DELETE_TOKEN } };
  app.delete<{ Params: { name: string } }>(`${TOKENS}/:name`, deleteToken, async (request) => {
    const owner = await tokenOwner(request);
    const deleted = await tokens.delete(owner.id, request.params.name);
    verifier.invalidateToken(deleted.id);
    return OK;
  });
}
