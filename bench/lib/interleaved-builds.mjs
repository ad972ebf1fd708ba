// Comparing builds in interleaved rounds (bench/compare/): each build runs a script in a process
// of its own, one build after the other in every round, so that the machine's load moves them
// alike; the ratios are read per round against the first build.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { root } from "./vigie.mjs";

/**
 * The builds named on the command line, `name=/build/root` each.
 * @throws Error with `usage` when none is given
 */
export function buildsOf(argv, usage) {
  const builds = argv.map((argument) => {
    const [name, path] = argument.split("=");
    return { name, build: join(path) };
  });
  if (builds.length === 0) throw new Error(`usage: ${usage}`);
  return builds;
}

/**
 * Runs `script` (an ES module's text) with `args` in a new Node process, from the repository's root,
 * and parses the last line it prints as JSON.
 * @throws Error when the process exits with a code other than 0
 */
export async function runScript(script, args, label) {
  const child = spawn(process.execPath, ["--input-type=module", "-e", script, ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  const code = await new Promise((done) => child.once("exit", done));
  if (code !== 0) throw new Error(`${label} exited with ${code}`);
  return JSON.parse(output.trim().split("\n").at(-1));
}

/**
 * Runs `measure(build)` for every build in each of `rounds` rounds, printing each round's figures
 * (`describe(result)`) and then each later build's ratios to the first, per round and their mean.
 * `figure(result)` is the number compared.
 */
export async function interleave({ builds, rounds, measure, figure, describe, unit }) {
  const figures = new Map(builds.map(({ name }) => [name, []]));
  for (let round = 1; round <= rounds; round++) {
    const line = [];
    for (const { name, build } of builds) {
      const result = await measure(build);
      figures.get(name).push(figure(result));
      line.push(`${name} ${describe(result)}`);
    }
    console.log(`round ${round}: ${line.join(", ")} ${unit}`);
  }
  const first = figures.get(builds[0].name);
  for (const { name } of builds.slice(1)) {
    const ratios = figures.get(name).map((value, index) => value / first[index]);
    const mean = ratios.reduce((sum, ratio) => sum + ratio, 0) / ratios.length;
    console.log(
      `${name} / ${builds[0].name}: ${ratios.map((ratio) => ratio.toFixed(2)).join(", ")}; mean x${mean.toFixed(2)}`,
    );
  }
}
