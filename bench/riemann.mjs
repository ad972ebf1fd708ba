// Riemann protocol input benchmark (target: ≥ 300 000 events/s over one connection with
// 100 events per message, and no less over ten connections). Each figure beside baselines measured
// in the same run:
//   (a) in-process: decoding the same message with protobufjs alone (the floor of any decoder), and
//       the whole per-frame path (decode → map → push into a stream with an index → reply bytes),
//       which bounds what the server can do on one core;
//   (b) the real server over TCP on loopback, one connection then ten, each keeping a bounded
//       window of messages in flight; the server's CPU time per event; and GET /healthz
//       requests/s for scale.
// Run: npm run bench -- riemann (BENCH_SECONDS sets the length of each network phase, default 5).
import { connect } from "node:net";
import { join } from "node:path";
import autocannon from "autocannon";
import protobuf from "protobufjs";
import { cpuSeconds, fmt, freePort, root, startVigie } from "./lib/vigie.mjs";

const { parseEdn } = await import(join(root, "dist/streams/edn.js"));
const { StreamEngine } = await import(join(root, "dist/streams/engine.js"));
const { RiemannHandler } = await import(join(root, "dist/streams/riemann/handler.js"));
const { encodeMsg } = await import(join(root, "dist/streams/riemann/protocol.js"));
const Msg = protobuf.loadSync(join(root, "proto/riemann.proto")).lookupType("vigie.riemann.Msg");

const EVENTS_PER_MESSAGE = 100;
/** Messages a connection keeps in flight (sent, reply not yet read). */
const WINDOW = 32;
const STREAM = "{:default true :actions {:action :index :params [[:host :service]]}}";
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

/** What collectd's write_riemann sends: 100 events (10 hosts × 10 services), with attributes. */
function message(variant) {
  const events = [];
  for (let i = 0; i < EVENTS_PER_MESSAGE; i++) {
    events.push({
      host: `host-${i % 10}`,
      service: `cpu-${Math.floor(i / 10)}/percent-${i % 3 === 0 ? "idle" : "user"}`,
      state: "ok",
      timeMicros: 1_700_000_000_000_000 + variant * 1_000_000 + i,
      metricD: i * 1.5,
      ttl: 20,
      tags: ["collectd"],
      attributes: [
        { key: "plugin", value: "cpu" },
        { key: "type", value: "percent" },
        { key: "ds_name", value: "value" },
      ],
    });
  }
  const body = encodeMsg({ events });
  const framed = Buffer.alloc(4 + body.length);
  framed.writeUInt32BE(body.length, 0);
  framed.set(body, 4);
  return { body, framed };
}

const MESSAGES = Array.from({ length: 16 }, (_, variant) => message(variant));

/** Events per second of `run` (one message per call): the median of 5 runs of `count` calls after a warm-up. */
function rate(count, run) {
  for (let i = 0; i < count; i++) run(i);
  const rates = [];
  for (let r = 0; r < 5; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < count; i++) run(i);
    rates.push((count * EVENTS_PER_MESSAGE) / (Number(process.hrtime.bigint() - started) / 1e9));
  }
  return rates.sort((a, b) => a - b)[2];
}

function inProcess() {
  const count = 5_000;
  let sink = 0;
  const decodeOnly = rate(count, (i) => {
    sink += Msg.decode(MESSAGES[i % MESSAGES.length].body).events.length;
  });
  const engine = new StreamEngine();
  engine.add("bench", parseEdn(STREAM), { kind: "api" });
  const handler = new RiemannHandler({ "max-query-results": 10_000 }, engine, {
    connections() {},
    message() {},
    events() {},
  });
  const whole = rate(count, (i) => {
    sink += handler.handle(MESSAGES[i % MESSAGES.length].body).length;
  });
  // The sums keep the loops' results alive; the index shows the events went through.
  if (sink === 0) throw new Error("nothing was decoded");
  if (engine.get("bench").index.size !== 100) throw new Error(`index holds ${engine.get("bench").index.size} events`);
  console.log(`(a) in-process, ${EVENTS_PER_MESSAGE} events per message (${MESSAGES[0].body.length} bytes):`);
  console.log(`    protobufjs decode alone (baseline):            ${fmt(decodeOnly)} events/s`);
  console.log(`    Vigie: decode + map + push + index + reply:     ${fmt(whole)} events/s`);
  console.log(`    Vigie / decode alone: ${(whole / decodeOnly).toFixed(2)}`);
}

/**
 * Sends messages over one connection for `seconds`, keeping {@link WINDOW} in flight.
 * @returns the number of ok replies; throws on an error reply
 */
function drive(port, seconds) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.setNoDelay(true);
    const deadline = Date.now() + seconds * 1000;
    let sent = 0;
    let answered = 0;
    let pending = Buffer.alloc(0);
    let stopping = false;
    const fill = () => {
      while (!stopping && sent - answered < WINDOW) {
        socket.write(MESSAGES[sent % MESSAGES.length].framed);
        sent++;
      }
    };
    socket.on("connect", fill);
    socket.on("error", reject);
    socket.on("data", (chunk) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= 4) {
        const length = pending.readUInt32BE(offset);
        if (pending.length - offset < 4 + length) break;
        // Msg{ok: true} is the two bytes 0x10 0x01.
        if (length !== 2 || pending[offset + 4] !== 0x10 || pending[offset + 5] !== 0x01) {
          reject(new Error(`unexpected reply ${pending.subarray(offset, offset + 4 + length).toString("hex")}`));
          socket.destroy();
          return;
        }
        offset += 4 + length;
        answered++;
      }
      pending = pending.subarray(offset);
      if (Date.now() >= deadline) stopping = true;
      if (stopping && answered === sent) {
        socket.end();
        resolve(answered);
      } else fill();
    });
  });
}

async function overTcp() {
  const riemannPort = await freePort();
  const vigie = await startVigie({
    yaml: `streams:\n  riemann:\n    enabled: true\n    host: 127.0.0.1\n    port: ${riemannPort}`,
  });
  try {
    const response = await fetch(`${vigie.base}/api/v1/stream/bench`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ config: Buffer.from(STREAM).toString("base64") }),
    });
    if (response.status !== 201) throw new Error(`POST stream: ${response.status} ${await response.text()}`);
    await drive(riemannPort, 1); // warm-up
    const health = await autocannon({ url: `${vigie.base}/healthz`, connections: 10, duration: SECONDS });
    console.log(
      `(b) the real server over TCP on loopback, ${SECONDS} s per phase, ${WINDOW} messages in flight per connection:`,
    );
    console.log(`    GET /healthz (baseline): ${fmt(health.requests.average)} requests/s`);
    for (const connections of [1, 10]) {
      const cpuBefore = cpuSeconds(vigie.child.pid);
      const started = process.hrtime.bigint();
      const counts = await Promise.all(Array.from({ length: connections }, () => drive(riemannPort, SECONDS)));
      const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
      const cpu = cpuSeconds(vigie.child.pid) - cpuBefore;
      const events = counts.reduce((sum, count) => sum + count, 0) * EVENTS_PER_MESSAGE;
      console.log(
        `    ${connections === 1 ? " 1 connection: " : "10 connections:"} ${fmt(events / elapsed)} events/s (target ≥ 300 000); server CPU ${((cpu / events) * 1e9).toFixed(0)} ns/event, ${((cpu / elapsed) * 100).toFixed(0)} % of a core`,
      );
    }
  } finally {
    await vigie.stop();
  }
}

inProcess();
await overTcp();
