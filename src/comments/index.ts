/**
 * The comments module: comments on the articles of static websites, a signed
 * challenge against spam, admin moderation and an event log.
 */
import type { FastifyInstance } from "fastify";
import { constantTimeEqual } from "../platform/auth.js";
import { defineModule } from "../platform/module.js";
import { ADMIN_PAGE_PATH } from "./admin-page.js";
import { listQuestion, mathQuestion, type Question } from "./challenge.js";
import { commentsCommands } from "./commands.js";
import { CommentPublisher } from "./comment-events.js";
import { COMMENTS_ENVIRONMENT, checkEmail, commentsConfigShape, refuseBoth } from "./config.js";
import { LIST_CACHE_SHARED_TTL_MS, ListCache } from "./list-cache.js";
import { CommentMail } from "./mail.js";
import { CommentMetrics } from "./metrics.js";
import { registerAdminRoutes } from "./routes/admin.js";
import { registerAssetRoutes, WIDGET_PATH } from "./routes/assets.js";
import { registerMailPages } from "./routes/mail-pages.js";
import { registerPublicRoutes } from "./routes/public.js";
import { resolveSecrets } from "./secrets.js";
import { CommentStore, commentsMigrations } from "./storage.js";
import { MailStore } from "./storage-mail.js";
import { Websites } from "./websites.js";

/** How often, in milliseconds, the SQLite data version is read. */
const DATA_VERSION_INTERVAL_MS = 1000;

/**
 * On SQLite, clears the cache of public lists when another process wrote to the database (`vigie
 * comments import` while the server runs): one `PRAGMA data_version` a second, a read of the
 * connection's own page cache state, so imported comments show within a second.
 */
function clearOnOtherWriters(app: FastifyInstance, store: CommentStore, lists: ListCache): void {
  let seen: number | undefined;
  const check = () => {
    store.dataVersion().then(
      (version) => {
        // The first read clears too: lists cached before it may predate another process's write
        // (an import that ends within the first second of the server).
        if (version !== seen) lists.clear();
        seen = version;
      },
      (error: unknown) => app.log.debug({ err: error }, "comments: reading the data version failed"),
    );
  };
  check();
  const timer = setInterval(check, DATA_VERSION_INTERVAL_MS);
  timer.unref();
  app.addHook("onClose", async () => clearInterval(timer));
}

/**
 * The comments module, for the `modules` list of `src/server.ts`. Its plugin resolves the secrets,
 * then registers the public routes (challenge, post, list, count), the admin routes, which share
 * the cache of the public list (list-cache.ts), and the widget and moderation page.
 */
export const commentsModule = defineModule({
  name: "comments",
  configShape: commentsConfigShape,
  environment: COMMENTS_ENVIRONMENT,
  migrations: commentsMigrations,
  commands: commentsCommands,
  generatedSecrets: [
    { key: "admin-token-file", file: "admin-token" },
    { key: "challenge.secret-file", file: "challenge-secret" },
  ],
  check: (section, platform) => {
    refuseBoth("comments.admin-token", "comments.admin-token-file", {
      inline: section["admin-token"],
      file: section["admin-token-file"],
    });
    checkEmail(section.email, platform.outputs);
  },
  links: () => [
    { title: "comment widget (embed in your pages)", path: WIDGET_PATH },
    { title: "comment moderation page", path: ADMIN_PAGE_PATH },
  ],
  plugin: async (app, { context, section }) => {
    const { adminToken, challengeSecret, mailKey } = await resolveSecrets(
      context.database,
      {
        adminToken: section["admin-token"] ?? section["admin-token-file"],
        challengeSecret: section.challenge.secret ?? section.challenge["secret-file"],
      },
      context.logger,
    );
    const websites = new Websites(section.websites);
    const store = new CommentStore(context.database, {
      limit: section["rate-limit"].comments,
      windowMs: section["rate-limit"].per.milliseconds,
    });
    const metrics = new CommentMetrics(context.metrics);
    // PostgreSQL may be shared by several instances, whose writes this cache cannot see: a TTL
    // bounds how long they stay invisible here. SQLite has one process, which invalidates itself.
    const lists = new ListCache({
      ttlMs: context.database.dialect === "postgres" ? LIST_CACHE_SHARED_TTL_MS : undefined,
      observer: metrics.listCache,
    });
    if (context.database.dialect === "sqlite") clearOnOtherWriters(app, store, lists);
    const questions: readonly Question[] = section.challenge.questions;
    const publicUrl = context.config.http["public-url"];
    const mailStore = new MailStore(context.database);
    const email = section.email;
    const mail =
      email === undefined
        ? undefined
        : new CommentMail(
            context.mailer,
            { output: email.output, notifyAdmin: email["notify-admin"], admins: email.admin, key: mailKey, publicUrl },
            mailStore,
            context.logger,
          );
    const { spam, akismet } = section;
    const checks = {
      metrics,
      mailStore,
      store,
      spam: {
        honeypot: spam.honeypot,
        minAnswerMs: spam["min-answer-time"].milliseconds,
        maxLinks: spam["max-links"],
        akismet,
        publicUrl,
      },
    };
    registerPublicRoutes(app, {
      websites,
      store,
      lists,
      metrics,
      challenge: { secret: challengeSecret, ttlMs: section.challenge.ttl.milliseconds },
      nextQuestion: section.challenge.type === "questions" ? () => listQuestion(questions) : () => mathQuestion(),
      publisher: new CommentPublisher(context.events, section.streams),
      checks,
      mail,
    });
    registerAdminRoutes(app, {
      websites,
      store,
      lists,
      guard: context.auth.require("admin", { alsoAccept: (token) => constantTimeEqual(token, adminToken) }),
      onApproved: (id) => void mail?.replyApproved(id),
    });
    // Registered even without `email`: links sent before it was removed keep working.
    await registerMailPages(app, { key: mailKey, store: mailStore, lists, mail });
    // The widget and the moderation page: public files, read once from the build.
    await registerAssetRoutes(app);
  },
});
