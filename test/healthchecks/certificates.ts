/**
 * Certificates generated at test time with the `openssl` command: a CA, a server certificate for
 * `localhost` and 127.0.0.1 valid 30 days, one valid 1 day (expiration-delay tests), a client
 * certificate (mutual TLS) and a client certificate of another CA (one a server refuses). Tests that need them skip, with the reason, when openssl is missing.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { temporaryDirectory } from "../support/temporary.js";

/** Paths of the generated files (PEM). */
export interface Certificates {
  readonly directory: string;
  readonly caCert: string;
  readonly serverKey: string;
  readonly serverCert: string;
  /** Same key, a certificate valid for one day only. */
  readonly shortCert: string;
  readonly clientKey: string;
  readonly clientCert: string;
  /** A client certificate (with its key) signed by the other CA: a server trusting `ca` refuses it. */
  readonly strangerKey: string;
  readonly strangerCert: string;
  /** A second CA that signed nothing we serve: verification against it fails. */
  readonly otherCaCert: string;
  /** Reads a file of this set. */
  read(path: string): Buffer;
}

/** Why certificate tests cannot run here, or `undefined` when openssl is available. */
export const OPENSSL_MISSING: string | undefined = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "openssl is not installed: TLS and HTTPS tests are skipped";
  }
})();

function openssl(directory: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: directory, stdio: ["ignore", "ignore", "pipe"] });
}

function signed(
  directory: string,
  name: string,
  days: number,
  extensions: string,
  key = `${name}.key`,
  ca = "ca",
): void {
  openssl(directory, ["req", "-new", "-key", key, "-subj", `/CN=${name}`, "-out", `${name}.csr`]);
  writeFileSync(join(directory, `${name}.ext`), extensions);
  openssl(directory, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-days",
    String(days),
    "-extfile",
    `${name}.ext`,
    "-out",
    `${name}.pem`,
  ]);
}

function ecKey(directory: string, file: string): void {
  openssl(directory, ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file]);
}

function selfSignedCa(directory: string, name: string): void {
  ecKey(directory, `${name}.key`);
  writeFileSync(
    join(directory, `${name}.cnf`),
    [
      "[req]",
      "distinguished_name = dn",
      "x509_extensions = ca",
      "prompt = no",
      "[dn]",
      `CN = Vigie test ${name}`,
      "[ca]",
      "basicConstraints = critical, CA:TRUE",
      "keyUsage = critical, keyCertSign, cRLSign",
      "subjectKeyIdentifier = hash",
      "",
    ].join("\n"),
  );
  openssl(directory, [
    "req",
    "-x509",
    "-new",
    "-key",
    `${name}.key`,
    "-config",
    `${name}.cnf`,
    "-days",
    "30",
    "-out",
    `${name}.pem`,
  ]);
}

/** Generates a fresh set in a temporary directory (a few hundred milliseconds). */
export function generateCertificates(): Certificates {
  const directory = temporaryDirectory("vigie-certs-");
  selfSignedCa(directory, "ca");
  selfSignedCa(directory, "other-ca");
  const serverExtensions =
    "subjectAltName = DNS:localhost, IP:127.0.0.1\nextendedKeyUsage = serverAuth\nbasicConstraints = CA:FALSE\n";
  ecKey(directory, "server.key");
  signed(directory, "server", 30, serverExtensions);
  signed(directory, "short", 1, serverExtensions, "server.key");
  ecKey(directory, "client.key");
  const clientExtensions = "extendedKeyUsage = clientAuth\nbasicConstraints = CA:FALSE\n";
  signed(directory, "client", 30, clientExtensions);
  ecKey(directory, "stranger.key");
  signed(directory, "stranger", 30, clientExtensions, "stranger.key", "other-ca");
  return {
    directory,
    caCert: join(directory, "ca.pem"),
    serverKey: join(directory, "server.key"),
    serverCert: join(directory, "server.pem"),
    shortCert: join(directory, "short.pem"),
    clientKey: join(directory, "client.key"),
    clientCert: join(directory, "client.pem"),
    strangerKey: join(directory, "stranger.key"),
    strangerCert: join(directory, "stranger.pem"),
    otherCaCert: join(directory, "other-ca.pem"),
    read: (path) => readFileSync(path),
  };
}
