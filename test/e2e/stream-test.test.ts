import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, temporaryDirectory } from "../support/process.js";

const root = resolve(import.meta.dirname, "../..");

describe("vigie stream test", () => {
  it("passes every example under examples/streams/", async () => {
    const tests = readdirSync(join(root, "examples/streams/tests"))
      .filter((file) => file.endsWith(".edn"))
      .map((file) => `examples/streams/tests/${file}`);
    // percentiles, coalesce, project and stable have an example each (issue 13), besides the others.
    for (const example of ["latency", "fleet", "cpu-total", "flapping", "http", "cpu"]) {
      expect(tests).toContain(`examples/streams/tests/${example}-test.edn`);
    }
    const result = await runCli(["stream", "test", "--config", "examples/streams/vigie.yaml", ...tests], {
      cwd: root,
    });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe("All tests successful\n");
    expect(result.code).toBe(0);
  });

  it("prints expected and actual for each failing tap and exits 1", async () => {
    const directory = temporaryDirectory();
    mkdirSync(join(directory, "streams"));
    writeFileSync(
      join(directory, "streams", "s.edn"),
      "{:s {:default true :actions {:action :increment :children [{:action :tap :params [:out]}]}}}",
    );
    writeFileSync(join(directory, "vigie.yaml"), `streams:\n  directories: [${join(directory, "streams")}]\n`);
    writeFileSync(
      join(directory, "tests.edn"),
      `{:good {:input [{:metric 1}] :taps {:out [{:metric 2}]}}
        :bad {:target :s :input [{:metric 1}] :taps {:out [{:metric 3}]}}
        :nowhere {:target :missing :input [] :taps {}}}`,
    );
    const result = await runCli([
      "stream",
      "test",
      "--config",
      join(directory, "vigie.yaml"),
      join(directory, "tests.edn"),
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL ${join(directory, "tests.edn")} bad: tap out`);
    expect(result.stdout).toContain('  expected: [{"metric":3}]');
    expect(result.stdout).toContain('  actual:   [{"metric":2}]');
    expect(result.stdout).toContain("nowhere: unknown target stream :missing");
    expect(result.stdout).toContain("2 of 3 tests failed");
    expect(result.stdout).not.toContain("good");
  });

  it("runs the streams persisted through the API too, those of the operator's files first", async () => {
    const directory = temporaryDirectory();
    const streams = join(directory, "streams");
    const api = join(streams, ".vigie-api");
    mkdirSync(api, { recursive: true });
    const tapping = (tap: string) => `{:persist true :actions {:action :tap :params [:${tap}]}}`;
    writeFileSync(join(api, "api.edn"), `{:api ${tapping("from-api")}}\n`);
    writeFileSync(join(api, "both.edn"), `{:both ${tapping("shadowed")}}\n`);
    writeFileSync(join(streams, "ops.edn"), "{:both {:actions {:action :tap :params [:from-file]}}}");
    writeFileSync(join(directory, "vigie.yaml"), `streams:\n  directories: [${streams}]\n`);
    writeFileSync(
      join(directory, "tests.edn"),
      `{:api {:target :api :input [{:metric 1}] :taps {:from-api [{:metric 1}]}}
        :both {:target :both :input [{:metric 2}] :taps {:from-file [{:metric 2}]}}}`,
    );
    const result = await runCli([
      "stream",
      "test",
      "--config",
      join(directory, "vigie.yaml"),
      join(directory, "tests.edn"),
    ]);
    expect(result.stdout).toBe("All tests successful\n");
    expect(result.code).toBe(0);
  });

  it("exits 1 naming the file when a streams file does not compile", async () => {
    const directory = temporaryDirectory();
    writeFileSync(join(directory, "broken.edn"), "{:s {:actions {:action :fooo}}}");
    writeFileSync(join(directory, "vigie.yaml"), `streams:\n  directories: [${directory}]\n`);
    writeFileSync(join(directory, "tests.edn"), "{}");
    const result = await runCli([
      "stream",
      "test",
      "--config",
      join(directory, "vigie.yaml"),
      join(directory, "tests.edn"),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `streams file ${join(directory, "broken.edn")}: stream s: invalid stream config: actions: unknown action :fooo`,
    );
  });

  it("records output and publish into taps, runs async queues inline, skips io, and never contacts an output", async () => {
    const directory = temporaryDirectory();
    mkdirSync(join(directory, "streams"));
    writeFileSync(
      join(directory, "streams", "s.edn"),
      `{:s {:default true
            :actions {:action :sdo
                      :children [{:action :async-queue :params [:slow]
                                  :children [{:action :output :params [:alerts]}]}
                                 {:action :publish! :params [:errors]}
                                 {:action :io :children [{:action :tap :params [:io]}]}]}}}`,
    );
    // Port 9 (discard) on loopback: nothing listens, and a test run must not try it anyway.
    writeFileSync(
      join(directory, "vigie.yaml"),
      [
        "streams:",
        `  directories: [${join(directory, "streams")}]`,
        "  outputs:",
        "    alerts: {type: alertmanager, url: http://127.0.0.1:9}",
        "  async-queues:",
        "    slow: {size: 1}",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(directory, "tests.edn"),
      `{:routed {:input [{:service "a" :state "critical"} {:service "b" :state "ok"}]
                 :taps {:alerts [{:service "a" :state "critical"} {:service "b" :state "ok"}]
                        :errors [{:service "a" :state "critical"} {:service "b" :state "ok"}]
                        :io []}}}`,
    );
    const result = await runCli([
      "stream",
      "test",
      "--config",
      join(directory, "vigie.yaml"),
      join(directory, "tests.edn"),
    ]);
    expect(result.stdout).toBe("All tests successful\n");
    expect(result.code).toBe(0);
  });

  it("exits 1 when a stream names an output the configuration does not declare", async () => {
    const directory = temporaryDirectory();
    writeFileSync(join(directory, "s.edn"), "{:s {:actions {:action :output :params [:pager]}}}");
    writeFileSync(join(directory, "vigie.yaml"), `streams:\n  directories: [${directory}]\n`);
    writeFileSync(join(directory, "tests.edn"), "{}");
    const result = await runCli([
      "stream",
      "test",
      "--config",
      join(directory, "vigie.yaml"),
      join(directory, "tests.edn"),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "stream s: invalid stream config: actions: output pager is not declared (outputs or streams.outputs)",
    );
  });
});
