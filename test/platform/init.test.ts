/**
 * The starting configuration of `vigie init`: uncommented, it is the defaults (so every key is
 * written, at its default, as valid YAML); the meanings come from docs/configuration.md; the
 * secret files are named, never written into it; nothing is overwritten.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CORE_SCHEMA, load as loadYaml } from "js-yaml";
import { describe, expect, it } from "vitest";
import { loadConfig, parseConfig } from "../../src/platform/config.js";
import { configurationText, InitRefusal, initDirectory, keyDocumentation, shellWord } from "../../src/platform/init.js";
import { modules } from "../../src/server.js";
import { temporaryDirectory } from "../support/temporary.js";

const page = readFileSync(resolve(import.meta.dirname, "../../docs/configuration.md"), "utf8");

/** The text with every `# ` of a key or section line removed (the text has no meanings). */
function uncommented(text: string): string {
  return text
    .split("\n")
    .filter((line) => !line.startsWith("# Vigie") && !line.startsWith("# the #") && !line.startsWith("# The"))
    .map((line) => line.replace(/^(\s*)# /, "$1"))
    .join("\n");
}

describe("vigie init", () => {
  it("writes every key at its default: uncommented, the file is the defaults", async () => {
    const defaults = await loadConfig(undefined, {}, modules);
    const text = configurationText(defaults, new Map(), new Map());
    expect(parseConfig(loadYaml(text, { schema: CORE_SCHEMA }), {}, modules)).toEqual(defaults);
    const raw = loadYaml(uncommented(text), { schema: CORE_SCHEMA });
    expect(parseConfig(raw, {}, modules)).toEqual(defaults);
  });

  it("describes each key with its meaning from docs/configuration.md", async () => {
    const docs = keyDocumentation(page);
    expect(docs.get("http.port")).toEqual({ default: "`8080`", meaning: "TCP port, 1–65535" });
    const text = configurationText(await loadConfig(undefined, {}, modules), docs, new Map());
    expect(text).toContain("  # TCP port, 1–65535\n  # port: 8080\n");
    expect(text).toContain("  # body-limit: 1MiB\n");
    expect(text).toContain("  # public-url: http://<host>:<port>\n");
  });

  it("writes the secrets to private files the configuration names, and never overwrites", async () => {
    const directory = join(temporaryDirectory("vigie-init-"), "with space");
    const report = await initDirectory(directory, modules);
    const text = readFileSync(report.config, "utf8");
    expect(report.secrets).toEqual([
      join(directory, "secrets/admin-token"),
      join(directory, "secrets/challenge-secret"),
    ]);
    for (const file of report.secrets) expect(text).not.toContain(readFileSync(file, "utf8").trim());
    const config = await loadConfig(report.config, {}, modules);
    expect(config.modules.comments?.["admin-token-file"]).toBe(readFileSync(report.secrets[0] ?? "", "utf8").trim());
    expect(shellWord(report.config)).toBe(`'${report.config}'`);
    expect(shellWord("/etc/vigie/vigie.yaml")).toBe("/etc/vigie/vigie.yaml");
    expect(shellWord("it's")).toBe(`'it'\\''s'`);

    // A secret file left alone is enough to refuse, before anything is written.
    const other = temporaryDirectory("vigie-init-");
    mkdirSync(join(other, "secrets"));
    writeFileSync(join(other, "secrets/challenge-secret"), "kept\n");
    await expect(initDirectory(other, modules)).rejects.toBeInstanceOf(InitRefusal);
    expect(existsSync(join(other, "vigie.yaml"))).toBe(false);
    expect(existsSync(join(other, "secrets/admin-token"))).toBe(false);
    expect(readFileSync(join(other, "secrets/challenge-secret"), "utf8")).toBe("kept\n");
  });
});
