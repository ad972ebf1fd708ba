/**
 * The streams module (docs/streams.md): named streams compiled from EDN configurations, an index
 * per stream, stream directories loaded at start-up and reloaded on SIGHUP, Prometheus remote write
 * and OpenTelemetry traces ingestion, InfluxDB line protocol, the Riemann (TCP, UDP) and Graphite
 * inputs, outputs, async queues and
 * WebSocket publish/subscribe.
 */
import { defineModule } from "../platform/module.js";
import { ValidationError } from "../platform/validation.js";
import { streamsCommands } from "./commands.js";
import { streamsShape } from "./config.js";
import { streamsPlugin } from "./plugin.js";
import { streamsMigrations } from "./storage.js";

export { streamsShape } from "./config.js";
export { loadStreamDirectories } from "./storage.js";

/**
 * The module, for the `modules` list of src/server.ts; its plugin is {@link streamsPlugin}.
 */
export const streamsModule = defineModule({
  name: "streams",
  configShape: streamsShape,
  migrations: streamsMigrations,
  links: (section) => [
    { title: "stream API", path: "/api/v1/stream" },
    {
      title: "Riemann protocol input",
      path: `tcp://${section.riemann.host}:${section.riemann.port}`,
      ...(section.riemann.enabled ? {} : { enableWith: "streams.riemann.enabled: true" }),
    },
    {
      title: "Riemann protocol input over UDP",
      path: `udp://${section.riemann.host}:${section.riemann["udp-port"] ?? 5555}`,
      ...(section.riemann["udp-port"] === undefined ? { enableWith: "streams.riemann.udp-port: 5555" } : {}),
    },
    {
      title: "Graphite plaintext input",
      path: `tcp://${section.graphite.host}:${section.graphite.port}`,
      ...(section.graphite.enabled ? {} : { enableWith: "streams.graphite.enabled: true" }),
    },
    { title: "InfluxDB line protocol", path: "/api/v1/influx/write" },
  ],
  check(section, platform) {
    const riemann = section.riemann;
    // Riemann's protocol carries no credentials: only client certificates can stand for a token.
    if (section.enabled && riemann.enabled && platform.security["require-token"] && riemann["tls-ca"] === undefined) {
      throw new ValidationError(
        "streams.riemann.tls-ca",
        "is required when security.require-token is true: the Riemann protocol carries no token, so the input needs TLS with client certificates (tls-cert, tls-key, tls-ca)",
      );
    }
    // UDP and Graphite's plaintext carry no credentials either, and have no TLS to stand for a token.
    if (section.enabled && platform.security["require-token"]) {
      if (riemann["udp-port"] !== undefined) {
        throw new ValidationError(
          "streams.riemann.udp-port",
          "cannot be set when security.require-token is true: a UDP datagram carries no token",
        );
      }
      if (section.graphite.enabled) {
        throw new ValidationError(
          "streams.graphite.enabled",
          "cannot be true when security.require-token is true: Graphite's plaintext protocol carries no token",
        );
      }
    }
  },
  outputs: (section) => section.outputs,
  commands: streamsCommands,
  plugin: streamsPlugin,
});
