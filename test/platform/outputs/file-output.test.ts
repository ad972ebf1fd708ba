import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { encodeFileBatch, fileTransport } from "../../../src/platform/outputs/file-output.js";
import { temporaryDirectory } from "../../support/temporary.js";

const ms = (milliseconds: number) => ({ text: `${milliseconds}ms`, milliseconds });
const now = Date.parse("2024-03-01T12:00:00Z") / 1000;

describe("encodeFileBatch", () => {
  it("writes one JSON line per event to the file, in order", () => {
    expect(encodeFileBatch("/var/log/events.jsonl", false, [{ a: 1 }, { b: "é\n" }], now)).toEqual({
      units: [{ payload: { path: "/var/log/events.jsonl", data: '{"a":1}\n{"b":"é\\n"}\n' }, events: 2 }],
      rejected: 0,
    });
  });

  it("with date-suffix, appends the UTC date of each event's time (now without one) to the file name", () => {
    const day1 = Date.parse("2024-02-29T23:59:59.9Z") / 1000;
    const day2 = Date.parse("2024-03-01T00:00:00Z") / 1000;
    const encoded = encodeFileBatch(
      "data/events.jsonl",
      true,
      [
        { n: 1, time: day2 },
        { n: 2, time: day1 },
        { n: 3 },
        { n: 4, time: day1 + 0.05 },
        { n: 5, time: "yesterday" },
        { n: 6, time: 1e300 },
      ],
      now - 86_400 * 3,
    );
    expect(encoded).toEqual({
      units: [
        { payload: { path: "data/events.jsonl-2024-03-01", data: `{"n":1,"time":${day2}}\n` }, events: 1 },
        {
          payload: {
            path: "data/events.jsonl-2024-02-29",
            data: `{"n":2,"time":${day1}}\n{"n":4,"time":${day1 + 0.05}}\n`,
          },
          events: 2,
        },
        {
          payload: {
            path: "data/events.jsonl-2024-02-27",
            data: '{"n":3}\n{"n":5,"time":"yesterday"}\n{"n":6,"time":1e+300}\n',
          },
          events: 3,
        },
      ],
      rejected: 0,
    });
  });

  it("dates events before 1970 too", () => {
    const [unit] = encodeFileBatch("f", true, [{ time: -1 }], now).units;
    expect(unit?.payload.path).toBe("f-1969-12-31");
  });

  it("writes the whole date of years that ISO 8601 extends beyond 0000–9999", () => {
    const path = (time: number) => encodeFileBatch("f", true, [{ time }], now).units[0]?.payload.path;
    expect(path(Date.parse("+010000-01-02T03:04:05Z") / 1000)).toBe("f-+010000-01-02");
    expect(path(Date.parse("-000001-12-31T00:00:00Z") / 1000)).toBe("f--000001-12-31");
    expect(path(Date.parse("9999-12-31T23:59:59Z") / 1000)).toBe("f-9999-12-31");
  });
});

describe("fileTransport", () => {
  const definition = (path: string, dateSuffix = false) =>
    ({
      type: "file",
      path,
      "date-suffix": dateSuffix,
      "queue-size": 100,
      "batch-size": 10,
      "flush-interval": ms(10),
      timeout: ms(1000),
      "max-retry-time": ms(1000),
      durable: false,
    }) as const;

  it("appends to an existing file and creates a missing one", async () => {
    const directory = temporaryDirectory();
    const path = join(directory, "events.jsonl");
    writeFileSync(path, "existing\n");
    const transport = fileTransport(definition(path));
    const [unit] = transport.encode([{ a: 1 }, { a: 2 }]).units;
    if (unit === undefined) throw new Error("no unit");
    expect(await transport.send(unit.payload, new AbortController().signal)).toEqual({ kind: "sent" });
    expect(await transport.send({ path: `${path}.new`, data: "x\n" }, new AbortController().signal)).toEqual({
      kind: "sent",
    });
    expect(readFileSync(path, "utf8")).toBe('existing\n{"a":1}\n{"a":2}\n');
    expect(readFileSync(`${path}.new`, "utf8")).toBe("x\n");
  });

  it("fails (so the delivery model retries) when the directory is gone", async () => {
    const directory = temporaryDirectory();
    const transport = fileTransport(definition(join(directory, "gone", "events.jsonl")));
    await expect(
      transport.send({ path: join(directory, "gone", "events.jsonl"), data: "x\n" }, new AbortController().signal),
    ).rejects.toMatchObject({ code: "ENOENT" });
  });
});
