/**
 * Cargo's web API under `/api/v1/crates` (docs/cargo.md): publish, yank and unyank, owners,
 * search and download, answering errors in Cargo's format `{"errors": [{"detail": "<sentence>"}]}`,
 * which cargo prints to its user.
 *
 * These routes take any body as bytes, with or without `Content-Type` (cargo sends none with a
 * publish, and `application/json` with an empty body to yank).
 */
import type { FastifyInstance } from "fastify";
import { cargoErrorBody, errorHandler, notFoundHandler } from "../../../platform/errors.js";
import type { CargoContext } from "./context.js";
import { registerDownloads } from "./downloads.js";
import { registerOwners } from "./owners.js";
import { PUBLISH_URL, registerPublish } from "./publish.js";
import { registerSearch } from "./search.js";
import { registerYank } from "./yank.js";

/** The prefix of Cargo's web API. */
export const WEB_API_PREFIX = "/api/v1/crates";

/** Registers Cargo's web API, in its own scope for its body parsing and error format. */
export function registerWebApi(app: FastifyInstance, context: CargoContext): void {
  const { settings, metrics } = context;
  app.register(
    async (cargo) => {
      cargo.removeAllContentTypeParsers();
      cargo.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
      cargo.setErrorHandler(
        errorHandler(cargoErrorBody, {
          tooLarge: (request) => {
            // Refused before the handler: counted here.
            if (request.routeOptions.url === PUBLISH_URL) metrics.publish("too-large");
            return `the request is larger than max-crate-size (${settings["max-crate-size"]} bytes)`;
          },
        }),
      );
      cargo.setNotFoundHandler(notFoundHandler(cargo, cargoErrorBody, false));
      registerPublish(cargo, context);
      registerYank(cargo, context);
      registerOwners(cargo, context);
      registerSearch(cargo, context);
      registerDownloads(cargo, context);
    },
    { prefix: WEB_API_PREFIX },
  );
}
