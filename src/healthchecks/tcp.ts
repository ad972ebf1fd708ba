/**
 * The tcp executor (docs/healthchecks.md): a connection opens and is closed at once; `should-fail`
 * inverts the verdict. The connection attempt is bounded by the check's timeout.
 */
import { connect } from "node:net";
import { startDeadline } from "./deadline.js";
import type { TcpDefinition } from "./definition.js";
import { endpoint, failure, type Outcome, SUCCESS } from "./outcome.js";

/**
 * Executes one tcp check. Never throws.
 *
 * @param stop aborted when the module stops; the attempt is abandoned
 * @returns without should-fail: success when the connection opens, else `TCP connection failed on
 *   127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9` (or `...: timeout after 2s`); with should-fail:
 *   success when it does not open, else `TCP connection succeeded on host:port but a failure was
 *   expected`
 */
export function runTcp(definition: TcpDefinition, stop?: AbortSignal): Promise<Outcome> {
  const where = endpoint(definition.target, definition.port);
  const deadline = startDeadline(definition.timeout.milliseconds, stop);
  return new Promise<Outcome>((resolve) => {
    const socket = connect({
      host: definition.target,
      port: definition.port,
      ...(definition["source-ip"] === undefined ? {} : { localAddress: definition["source-ip"] }),
    });
    let settled = false;
    const settle = (connected: boolean, reason: string) => {
      if (settled) return;
      settled = true;
      deadline.clear();
      socket.destroy();
      if (definition["should-fail"]) {
        resolve(connected ? failure(`TCP connection succeeded on ${where} but a failure was expected`) : SUCCESS);
      } else {
        resolve(connected ? SUCCESS : failure(`TCP connection failed on ${where}: ${reason}`));
      }
    };
    socket.once("connect", () => settle(true, ""));
    socket.once("error", (error) => settle(false, error.message));
    deadline.onAbort(() =>
      settle(
        false,
        deadline.timedOut() ? `timeout after ${definition.timeout.text}` : "the healthchecks module is stopping",
      ),
    );
  });
}
