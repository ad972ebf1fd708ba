// The bare undici loop that the healthchecks benchmarks measure Vigie against.

/**
 * The baseline of the CPU figure: a bare loop in a process of its own, one undici Pool to the
 * target, sending `rate` requests per second evenly (the due ones at each tick of `tick`
 * milliseconds), reading each body and checking its status, until killed. It prints the number of
 * failures on SIGTERM.
 */
export const BARE_LOOP = `
import { Pool } from "undici";
const [origin, rate, tick] = process.argv.slice(1);
const pool = new Pool(origin);
let sent = 0;
let failures = 0;
const begun = performance.now();
const send = () => {
  pool.request({ path: "/", method: "GET" }).then(
    async (response) => {
      await response.body.text();
      if (response.statusCode !== 200) failures++;
    },
    () => failures++,
  );
};
setInterval(() => {
  const due = Math.floor(((performance.now() - begun) / 1000) * Number(rate));
  while (sent < due) {
    sent++;
    send();
  }
}, Number(tick));
process.on("SIGTERM", () => {
  console.log(JSON.stringify({ sent, failures }));
  process.exit(0);
});
`;
