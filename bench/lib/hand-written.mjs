// The hand-written baseline of the streams benchmarks: where → by [:host] → fixed-time-window 10 →
// coll-count written as plain closures, the least a JavaScript pipeline of the same shape costs.

/**
 * Runs `events` (`{host, metric, time}` objects, time in seconds) through the hand-written pipeline.
 * @returns the number of windows it closed (a count for the caller to consume)
 */
export function handWrittenPipeline(events) {
  let emitted = 0;
  const forks = new Map();
  const window = () => {
    let index = Number.NEGATIVE_INFINITY;
    let buffer = [];
    return (event) => {
      const k = Math.floor(event.time / 10);
      if (k > index) {
        if (buffer.length > 0) emitted += 1;
        buffer = [];
        index = k;
      }
      buffer.push(event);
    };
  };
  const by = (event) => {
    let fork = forks.get(event.host);
    if (fork === undefined) {
      fork = window();
      forks.set(event.host, fork);
    }
    fork(event);
  };
  const where = (event) => {
    if (typeof event.metric === "number" && event.metric > 0) by(event);
  };
  for (let i = 0; i < events.length; i++) where(events[i]);
  return emitted;
}
