/**
 * Helpers of the comments API tests: a server with the comments module on a given database, and a
 * visitor that fetches a challenge, solves it and posts a comment, the way a static page would.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, afterEach, beforeAll } from "vitest";
import { commentsModule } from "../../src/comments/index.js";
import { defineModule } from "../../src/platform/module.js";
import type { VigieServer } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestServer } from "../support/server.js";

/** The admin token the tests configure. */
export const ADMIN_TOKEN = "test-admin-token";
/** The challenge secret the tests configure, so they can sign challenges of their own. */
export const CHALLENGE_SECRET = "test-challenge-secret";

/** Registry tokens a stand-in verifier knows (the registry module registers the real one). */
export const registryStandIn = defineModule({
  name: "registry-stand-in",
  configShape: {},
  migrations: {},
  plugin: async (_app, { context }) => {
    context.auth.setVerifier((token) => {
      if (token === "registry-admin") return { outcome: "ok", principal: { id: "1", name: "root", role: "admin" } };
      if (token === "registry-tech") return { outcome: "ok", principal: { id: "2", name: "ops", role: "tech" } };
      return { outcome: "invalid" };
    });
  },
});

/**
 * Starts a server with the comments module on `url`. The admin token and the challenge secret are
 * configured unless `comments` sets them (or sets them to `undefined` to have them generated).
 */
export async function startComments(
  url: string,
  comments: Record<string, unknown> = {},
  extra: { config?: Record<string, unknown>; environment?: Record<string, string> } = {},
): Promise<VigieServer> {
  const { challenge, ...rest } = comments as { challenge?: Record<string, unknown> };
  const section: Record<string, unknown> = {
    "admin-token": ADMIN_TOKEN,
    ...rest,
    challenge: { secret: CHALLENGE_SECRET, ...challenge },
  };
  for (const [key, value] of Object.entries(section)) if (value === undefined) delete section[key];
  const challengeSection = section.challenge as Record<string, unknown>;
  for (const [key, value] of Object.entries(challengeSection)) if (value === undefined) delete challengeSection[key];
  return startTestServer({
    modules: [commentsModule, registryStandIn],
    config: { database: { url }, comments: section, ...extra.config },
    ...(extra.environment === undefined ? {} : { environment: extra.environment }),
  });
}

/** The answer of a math question `what is the result of: a op b`. */
export function solve(question: string): string {
  const match = /^what is the result of: (\d+) ([-+*]) (\d+)$/.exec(question);
  if (match === null) throw new Error(`not a math question: ${question}`);
  const [left, right] = [Number(match[1]), Number(match[3])];
  return String(match[2] === "+" ? left + right : match[2] === "-" ? left - right : left * right);
}

/** A challenge as the API issues it. */
export interface IssuedChallenge {
  timestamp: number;
  question: string;
  signature: string;
}

/** Fetches a challenge. @throws Error when the answer is not 200 */
export async function fetchChallenge(app: FastifyInstance, website: string, article: string): Promise<IssuedChallenge> {
  const response = await app.inject({ method: "GET", url: `/api/v1/challenge/${website}/${article}` });
  if (response.statusCode !== 200) throw new Error(`challenge: ${response.statusCode} ${response.body}`);
  return response.json();
}

/** A post body with a solved challenge of this article. */
export async function solvedBody(
  app: FastifyInstance,
  website: string,
  article: string,
  fields: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const { timestamp, question, signature } = await fetchChallenge(app, website, article);
  return { author: "Ann", content: "Nice post", answer: solve(question), signature, timestamp, ...fields };
}

/** Posts a comment body. */
export function postComment(
  app: FastifyInstance,
  website: string,
  article: string,
  body: unknown,
  options: { remoteAddress?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: "POST",
    url: `/api/v1/comment/${website}/${article}`,
    payload: body as Record<string, unknown>,
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }),
  });
}

/** Fetches a challenge, solves it and posts a comment. */
export async function addComment(
  app: FastifyInstance,
  website: string,
  article: string,
  fields: Record<string, unknown> = {},
  options: { remoteAddress?: string } = {},
): Promise<LightMyRequestResponse> {
  return postComment(app, website, article, await solvedBody(app, website, article, fields), options);
}

/** Calls an admin route with the admin token (or `authorization`, `null` for none). */
export function admin(
  app: FastifyInstance,
  method: "GET" | "POST" | "DELETE",
  url: string,
  authorization: string | null = ADMIN_TOKEN,
): Promise<LightMyRequestResponse> {
  return app.inject({ method, url, headers: authorization === null ? {} : { authorization } });
}

/** The arguments of {@link startComments} after the database URL. */
export type StartArguments = Parameters<typeof startComments> extends [string, ...infer R] ? R : never;

/**
 * Registers, in the calling describe, a fresh database of `kind` for its tests (dropped after them)
 * and the closing of each test's server after the test.
 * @returns `start`, which starts the comments module on that database, and `current`, the server
 *   of the running test
 */
export function commentsServers(kind: "sqlite" | "postgres", skip: boolean) {
  let database: TestDatabase;
  let server: VigieServer | undefined;
  beforeAll(async () => {
    if (!skip) database = await createTestDatabase(kind);
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  afterAll(async () => {
    if (!skip) await database.drop();
  });
  return {
    start: async (...args: StartArguments): Promise<VigieServer> => {
      server = await startComments(database.url, ...args);
      return server;
    },
    current: (): VigieServer => {
      if (server === undefined) throw new Error("no server started in this test");
      return server;
    },
  };
}
