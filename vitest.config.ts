import { defineConfig } from "vitest/config";

// VIGIE_TEST_REPORT (set by .ci/run) also writes a JSON report, from which CI prints a summary line.
const report = process.env.VIGIE_TEST_REPORT;

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Removes the temporary directories each test file made (test/support/temporary.ts).
    setupFiles: ["test/support/cleanup.ts"],
    // End-to-end tests start real processes; give them room on a 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: report ? ["default", "json"] : ["default"],
    ...(report ? { outputFile: { json: report } } : {}),
  },
});
