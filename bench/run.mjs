// Runs the benchmarks: every bench/<name>.mjs, or only those named on the command line
// (`npm run bench -- registry-auth`). Each benchmark prints its figures beside a baseline measured
// in the same run; nothing here asserts a timing.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((file) => file.endsWith(".mjs") && file !== "run.mjs")
  .map((file) => file.slice(0, -".mjs".length))
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(", ")}; available: ${available.join(", ") || "none"}`);
  process.exit(2);
}
let failed = false;
for (const name of wanted.length > 0 ? wanted : available) {
  console.log(`\n== ${name} ==`);
  const result = spawnSync(process.execPath, [join(here, `${name}.mjs`)], { stdio: "inherit" });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
