/**
 * Servers the executor tests check against, each on 127.0.0.1 and a port of its own, plus a port
 * nothing listens on.
 */
import type { Server } from "node:net";
import { createServer as createTcpServer } from "node:net";
import { freePort } from "../support/process.js";

/** A listening server and how to stop it. */
export interface Listening {
  readonly port: number;
  close(): Promise<void>;
}

/** Starts `server` on 127.0.0.1 and an ephemeral port. */
export async function listen(server: Server): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** A TCP server that accepts connections and keeps them open without a word. */
export async function silentTcpServer(): Promise<Listening> {
  const sockets = new Set<import("node:net").Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  const listening = await listen(server);
  return {
    port: listening.port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await listening.close();
    },
  };
}

/** A port on 127.0.0.1 where nothing listens (free a moment ago). */
export function closedPort(): Promise<number> {
  return freePort();
}
