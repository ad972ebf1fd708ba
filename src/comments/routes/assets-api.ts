/**
 * What the widget and moderation page routes say of themselves in `GET /openapi.json`: public
 * files, each answered with its media type (its charset is UTF-8). A `304` answers a matching
 * `If-None-Match`, and a file the build did not make answers `404` (routes/assets.ts).
 */
import type { RouteDescription } from "../../platform/openapi.js";

/** A public file of `mediaType`: its text, or a 304; 404 when the build did not make it. */
function fileApi(summary: string, mediaType: string): RouteDescription {
  return {
    summary,
    success: [
      { mediaType, schema: { type: "string", minLength: 1 } },
      { status: 304, description: "not modified: If-None-Match holds the file's ETag" },
    ],
    errors: [404],
    security: "none",
  };
}

export const WIDGET_API = fileApi("the comment widget, a script to embed in the pages of a website", "text/javascript");

export const ADMIN_SCRIPT_API = fileApi("the script of the moderation page", "text/javascript");

export const ADMIN_STYLE_API = fileApi("the style sheet of the moderation page", "text/css");

export const ADMIN_PAGE_API = fileApi(
  "the comment moderation page (its script calls the admin API with a token)",
  "text/html",
);
