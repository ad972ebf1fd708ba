/** `cargo owner`: list, add and remove the owners of a crate. */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { InvalidError, NotFoundError } from "../../../platform/errors.js";
import { ownersBody } from "../owners.js";
import { ADD_OWNERS, LIST_OWNERS, REMOVE_OWNERS } from "./api.js";
import { type CargoContext, SMALL_BODY } from "./context.js";

/** Registers `GET`, `PUT` and `DELETE /:name/owners` on Cargo's web API. */
export function registerOwners(cargo: FastifyInstance, context: CargoContext): void {
  const { authRequired, authenticate, requireUser, findCrate, requireOwner, store, users, releases, now } = context;

  cargo.get<{ Params: { name: string } }>("/:name/owners", { config: { openapi: LIST_OWNERS } }, async (request) => {
    await authenticate(request, authRequired);
    const crate = await findCrate(request.params.name);
    return { users: await store.owners(crate.id) };
  });

  const changeOwners = (add: boolean) => async (request: FastifyRequest<{ Params: { name: string } }>) => {
    const principal = await requireUser(request);
    const crate = await findCrate(request.params.name);
    await requireOwner(principal, crate, "change-owners");
    const { users: names } = ownersBody(jsonOf(request.body), "");
    const ids: string[] = [];
    for (const name of names) {
      const user = await users.find(name);
      if (user === undefined) throw new NotFoundError(`user ${name} not found`);
      ids.push(user.id);
    }
    if (add) await store.addOwners(crate.id, ids);
    else await store.removeOwners(crate.id, crate.name, ids);
    const action = add ? "owner-add" : "owner-remove";
    releases.publish({ action, crate: crate.name, owners: names, user: principal.name, timeMs: now() });
    const who = names.length === 1 ? `user ${names[0]} has` : `users ${names.join(", ")} have`;
    const what = add ? "been added as an owner" : "been removed from the owners";
    return { ok: true, msg: `${who} ${what}${add && names.length > 1 ? "s" : ""} of crate ${crate.name}` };
  };
  cargo.put("/:name/owners", { bodyLimit: SMALL_BODY, config: { openapi: ADD_OWNERS } }, changeOwners(true));
  cargo.delete("/:name/owners", { bodyLimit: SMALL_BODY, config: { openapi: REMOVE_OWNERS } }, changeOwners(false));
}

/**
 * The JSON of a body taken as bytes (Cargo's web API parses no body itself).
 * @throws InvalidError when it is not JSON
 */
function jsonOf(body: unknown): unknown {
  try {
    return Buffer.isBuffer(body) ? JSON.parse(body.toString("utf8")) : undefined;
  } catch {
    throw new InvalidError('the body is not JSON: send {"users": ["name"]}');
  }
}
