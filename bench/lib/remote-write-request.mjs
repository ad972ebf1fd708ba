// The remote write request of the benchmarks: 1 000 series of one sample each, like node_exporter's
// through Prometheus (sorted labels), snappy-compressed.
import { join } from "node:path";
import protobuf from "protobufjs";
import { compressSync } from "snappy";
import { root } from "./vigie.mjs";

/** Series per request. */
export const SERIES = 1_000;

/** The stream the benchmarks push into: a `where` then an `index`. */
export const STREAM = `{:actions {:action :where :params [[:= :job "node"]]
                 :children [{:action :index :params [[:service :instance]]}]}}`;

export const WriteRequest = protobuf
  .loadSync(join(root, "proto/remote-write.proto"))
  .lookupType("prometheus.WriteRequest");

/** A request like node_exporter's through Prometheus: sorted labels, one sample per series. */
export function request(labelCount) {
  const timeseries = [];
  for (let s = 0; s < SERIES; s++) {
    const labels = [
      { name: "__name__", value: `node_metric_${s % 50}_total` },
      { name: "instance", value: `10.0.${Math.floor(s / 250)}.${s % 250}:9100` },
      { name: "job", value: "node" },
    ];
    for (let l = labels.length; l < labelCount; l++)
      labels.push({ name: `label_${l}`, value: `value_${(s * 7 + l) % 40}` });
    labels.sort((a, b) => (a.name < b.name ? -1 : 1));
    timeseries.push({ labels, samples: [{ value: s * 1.5, timestamp: 1_700_000_000_000 + s }] });
  }
  return compressSync(Buffer.from(WriteRequest.encode(WriteRequest.fromObject({ timeseries })).finish()));
}
