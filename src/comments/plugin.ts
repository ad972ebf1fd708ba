/**
 * The comments module's Fastify plugin: resolves its secrets (comments.md §7), then registers the
 * public routes (§4–5) and the admin routes (§6).
 */
import type { FastifyPluginAsync } from "fastify";
import { constantTimeEqual } from "../platform/auth.js";
import type { ModuleOptions } from "../platform/module.js";
import { registerAdminRoutes } from "./admin-routes.js";
import { listQuestion, mathQuestion, type Question } from "./challenge.js";
import type { commentsConfigShape } from "./config.js";
import { CommentMetrics } from "./metrics.js";
import { registerPublicRoutes } from "./public-routes.js";
import { resolveSecrets } from "./secrets.js";
import { CommentStore } from "./storage.js";
import { Websites } from "./websites.js";

/** Registers the comments API for one server. */
export const commentsPlugin: FastifyPluginAsync<ModuleOptions<typeof commentsConfigShape>> = async (
  app,
  { context, section },
) => {
  const { adminToken, challengeSecret } = await resolveSecrets(
    context.database,
    { adminToken: section["admin-token"], challengeSecret: section.challenge.secret },
    context.logger,
  );
  const websites = new Websites(section.websites);
  const store = new CommentStore(context.database, {
    limit: section["rate-limit"].comments,
    windowMs: section["rate-limit"].per.milliseconds,
  });
  const questions: readonly Question[] = section.challenge.questions;
  registerPublicRoutes(app, {
    websites,
    store,
    metrics: new CommentMetrics(context.metrics),
    challenge: { secret: challengeSecret, ttlMs: section.challenge.ttl.milliseconds },
    nextQuestion: section.challenge.type === "questions" ? () => listQuestion(questions) : () => mathQuestion(),
  });
  registerAdminRoutes(app, {
    websites,
    store,
    guard: context.auth.require("admin", { alsoAccept: (token) => constantTimeEqual(token, adminToken) }),
  });
};
