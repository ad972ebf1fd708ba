import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter as HttpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addStream, freePort, startVigie, temporaryDirectory, type VigieProcess } from "../support/process.js";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

describe("OpenTelemetry JS SDK exporters against the real process", () => {
  let vigie: VigieProcess;
  beforeAll(async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    const configFile = join(directory, "vigie.yaml");
    writeFileSync(configFile, `http:\n  port: ${port}\n`);
    vigie = await startVigie({ configFile, port, cwd: directory });
    for (const name of ["proto", "json"]) {
      expect(await addStream(vigie.baseUrl, name, "{:actions {:action :index :params [[:span-id]]}}")).toBe(201);
    }
  });
  afterAll(async () => {
    vigie.child.kill("SIGTERM");
    await vigie.exited;
  });

  async function exportSpans(
    exporter: SpanExporter,
    service: string,
  ): Promise<{ traceId: string; parentId: string; childId: string }> {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": service, "deployment.environment": "test" }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer("vigie-e2e", "1.0.0");
    const parent = tracer.startSpan("checkout", { attributes: { "http.method": "POST" } });
    const child = tracer.startSpan(
      "charge card",
      {
        kind: 2, // SpanKind.CLIENT
        attributes: {
          "payment.amount": 12.5,
          "payment.attempts": 3,
          "payment.retried": true,
          "payment.steps": ["auth", "capture"],
          "payment.provider": "acme",
        },
      },
      trace.setSpan(context.active(), parent),
    );
    child.addEvent("retry", { "retry.delay_ms": 250 });
    child.setStatus({ code: SpanStatusCode.ERROR, message: "card declined" });
    child.end();
    parent.end();
    await provider.forceFlush();
    await provider.shutdown();
    return {
      traceId: parent.spanContext().traceId,
      parentId: parent.spanContext().spanId,
      childId: child.spanContext().spanId,
    };
  }

  async function indexed(stream: string): Promise<Array<Record<string, unknown>>> {
    const query = encodeURIComponent(b64("[:true]"));
    const response = await fetch(`${vigie.baseUrl}/api/v1/index/${stream}/search?query=${query}`);
    return ((await response.json()) as { events: Array<Record<string, unknown>> }).events;
  }

  for (const [encoding, makeExporter] of [
    ["proto", (url: string) => new ProtobufExporter({ url })],
    ["json", (url: string) => new HttpJsonExporter({ url })],
  ] as const) {
    it(`delivers spans with @opentelemetry/exporter-trace-otlp-${encoding === "proto" ? "proto" : "http"} (${encoding})`, async () => {
      const ids = await exportSpans(
        makeExporter(`${vigie.baseUrl}/api/v1/opentelemetry/v1/traces/${encoding}`),
        `shop-${encoding}`,
      );
      const events = await indexed(encoding);
      expect(events).toHaveLength(2);
      const child = events.find((event) => event["span-id"] === ids.childId);
      const parent = events.find((event) => event["span-id"] === ids.parentId);
      expect(parent).toMatchObject({
        service: `shop-${encoding}`,
        name: "checkout",
        "trace-id": ids.traceId,
        kind: "internal",
        state: "unset",
        attributes: { "http.method": "POST" },
        scope: { name: "vigie-e2e", version: "1.0.0" },
      });
      expect(parent).not.toHaveProperty("parent-span-id");
      expect(child).toMatchObject({
        service: `shop-${encoding}`,
        name: "charge card",
        "trace-id": ids.traceId,
        "parent-span-id": ids.parentId,
        kind: "client",
        state: "error",
        description: "card declined",
        attributes: {
          "payment.amount": 12.5,
          "payment.attempts": 3,
          "payment.retried": true,
          "payment.steps": ["auth", "capture"],
          "payment.provider": "acme",
        },
        resource: { "service.name": `shop-${encoding}`, "deployment.environment": "test" },
        events: [{ name: "retry", attributes: { "retry.delay_ms": 250 } }],
      });
      const time = child?.time as number;
      const start = child?.["start-time"] as number;
      expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(60);
      expect(child?.metric).toBeCloseTo(time - start, 6);
      expect(child?.metric).toBeGreaterThanOrEqual(0);
    });
  }
});
