/**
 * `GET /api/v1/stream/<name>/graph` (docs/streams.md): a running stream's action tree with the
 * events each action received (`in`) and emitted (`out`) since the stream started, as JSON, or as
 * an SVG drawing when the request's `Accept` names `image/svg+xml`.
 */
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import type { RouteDescription } from "../../platform/openapi.js";
import type { JsonSchema } from "../../platform/validation.js";
import type { StreamEngine } from "../engine.js";
import { graphSvg } from "../graph-svg.js";
import { type NamedRoute, streamNotFound } from "./request.js";

/** What the route needs. */
export interface GraphRoutesOptions {
  readonly engine: StreamEngine;
  /** A guard when `security.require-token` is true. */
  readonly guard: preHandlerHookHandler | undefined;
}

/** One node of the graph. */
const NODE: JsonSchema = {
  type: "object",
  properties: {
    action: { type: "string", description: "the action's name, without the colon" },
    params: { type: "array", items: { type: "string" }, description: "each param as EDN text" },
    "tap-point": { type: "string" },
    in: { type: "integer", minimum: 0, description: "values received since the stream started (a list counts once)" },
    out: { type: "integer", minimum: 0, description: "values emitted since the stream started" },
    children: { type: "array", items: { type: "object" }, description: "the action's children, nodes of this shape" },
  },
  required: ["action", "params", "in", "out", "children"],
  additionalProperties: false,
};

const readGraph: RouteDescription = {
  summary: "a running stream's action tree with per-action event counts (JSON, or SVG with Accept: image/svg+xml)",
  success: {
    content: [
      { mediaType: "application/json", schema: NODE },
      { mediaType: "image/svg+xml", schema: { type: "string" } },
    ],
  },
  headers: {
    Accept: { type: "string", description: "image/svg+xml for the drawing; JSON otherwise" },
  },
};

/** Whether an `Accept` header asks for SVG (a media range naming it; RFC 9110 §12.5.1). */
function wantsSvg(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*image\/svg\+xml\s*(;|,|$)/i.test(accept);
}

/** Registers the graph route. */
export async function graphRoutes(app: FastifyInstance, options: GraphRoutesOptions): Promise<void> {
  const { engine, guard } = options;
  app.get<NamedRoute>(
    "/api/v1/stream/:name/graph",
    { ...(guard === undefined ? {} : { preHandler: guard }), config: { openapi: readGraph } },
    async (request, reply) => {
      const stream = engine.get(request.params.name);
      if (stream === undefined) throw streamNotFound(request.params.name);
      const graph = stream.graph();
      if (!wantsSvg(request.headers.accept)) return graph;
      return reply.type("image/svg+xml; charset=utf-8").send(await graphSvg(graph, `stream ${stream.name}`));
    },
  );
}
