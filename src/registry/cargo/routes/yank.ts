/** `cargo yank` and `cargo yank --undo`: a version hidden from new resolutions, or shown again. */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { NotFoundError } from "../../../platform/errors.js";
import { versionKey } from "../publish.js";
import { UNYANK, YANK } from "./api.js";
import { type CargoContext, isVersion, SMALL_BODY } from "./context.js";

/** Registers `DELETE /:name/:version/yank` and `PUT /:name/:version/unyank` on Cargo's web API. */
export function registerYank(cargo: FastifyInstance, context: CargoContext): void {
  const { requireUser, findCrate, requireOwner, store, releases, now } = context;
  const yank = (yanked: boolean) => async (request: FastifyRequest<{ Params: { name: string; version: string } }>) => {
    const principal = await requireUser(request);
    const crate = await findCrate(request.params.name);
    await requireOwner(principal, crate, "yank");
    const version = request.params.version;
    const at = now();
    // Read first so that a repeated yank (idempotent) announces nothing: only a change is an event.
    const before = isVersion(version) ? await store.findVersion(crate.id, versionKey(version)) : undefined;
    const found = before !== undefined && (await store.setYanked(crate.id, versionKey(version), yanked, at));
    if (!found) throw new NotFoundError(`crate ${crate.name} has no version ${version}`);
    if (before.yanked !== yanked) {
      const action = yanked ? "yank" : "unyank";
      releases.publish({ action, crate: crate.name, version: before.vers, user: principal.name, timeMs: at });
    }
    return { ok: true };
  };
  cargo.delete("/:name/:version/yank", { bodyLimit: SMALL_BODY, config: { openapi: YANK } }, yank(true));
  cargo.put("/:name/:version/unyank", { bodyLimit: SMALL_BODY, config: { openapi: UNYANK } }, yank(false));
}
