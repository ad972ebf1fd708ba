/**
 * The comments module (comments.md): comments on the articles of static websites, a signed
 * challenge against spam, admin moderation and an event log.
 */
import { defineModule } from "../platform/module.js";
import { COMMENTS_ENVIRONMENT, commentsConfigShape } from "./config.js";
import { commentsMigrations } from "./migrations.js";
import { commentsPlugin } from "./plugin.js";

/** The comments module, for the `modules` list of `src/server.ts`. */
export const commentsModule = defineModule({
  name: "comments",
  configShape: commentsConfigShape,
  environment: COMMENTS_ENVIRONMENT,
  migrations: commentsMigrations,
  plugin: commentsPlugin,
});
