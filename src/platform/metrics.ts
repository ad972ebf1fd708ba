/**
 * Metrics (platform.md §6): one prom-client registry per server with the default process and
 * Node.js metrics, the HTTP metrics labelled by route pattern, and every module's own metrics.
 */
import type { FastifyInstance } from "fastify";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** The label of requests that matched no route, so unknown URLs cannot explode the series count. */
export const UNMATCHED_ROUTE = "unmatched";

/** Creates the registry of one server, with the default process and Node.js metrics. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Counts every response in `http_requests_total{method,route,status}` and times it in
 * `http_request_duration_seconds{method,route}` (seconds), `route` being the route pattern
 * (`/api/v1/stream/:name`), never the raw URL. Serves the registry on `GET /metrics`.
 */
export function installHttpMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP responses sent, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to sending its response, in seconds, by method and route pattern.",
    labelNames: ["method", "route"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // Label children resolved once per (method, route[, status]) instead of hashing labels per request.
  const counterChildren = new Map<string, { inc(): void }>();
  const histogramChildren = new Map<string, { observe(value: number): void }>();

  app.addHook("onResponse", (request, reply, done) => {
    const method = request.method;
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const status = reply.statusCode;
    const routeKey = `${method} ${route}`;
    const countKey = `${routeKey} ${status}`;
    let counter = counterChildren.get(countKey);
    if (counter === undefined) {
      counter = requests.labels(method, route, String(status));
      counterChildren.set(countKey, counter);
    }
    counter.inc();
    let histogram = histogramChildren.get(routeKey);
    if (histogram === undefined) {
      histogram = durations.labels(method, route);
      histogramChildren.set(routeKey, histogram);
    }
    histogram.observe(reply.elapsedTime / 1000);
    done();
  });

  app.get("/metrics", async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
