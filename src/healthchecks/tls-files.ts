/**
 * The client certificate and CA bundle files of http and tls checks (`key`, `cert`, `cacert`),
 * read at each execution so that renewed files are used without re-registering the check.
 */
import { readFile } from "node:fs/promises";

/** The fields naming TLS files. */
export interface TlsFileFields {
  readonly key?: string;
  readonly cert?: string;
  readonly cacert?: string;
}

/** The contents, as `tls.connect` takes them (`ca` replaces the system trust store). */
export interface TlsFiles {
  key?: Buffer;
  cert?: Buffer;
  ca?: Buffer;
}

/** A TLS file that could not be read; the message reads `cannot read cert /etc/x.pem: ENOENT`. */
export class TlsFileError extends Error {
  constructor(field: string, path: string, cause: unknown) {
    super(`cannot read ${field} ${path}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`);
    this.name = "TlsFileError";
  }
}

async function read(field: string, path: string | undefined): Promise<Buffer | undefined> {
  if (path === undefined) return undefined;
  try {
    return await readFile(path);
  } catch (error) {
    throw new TlsFileError(field, path, error);
  }
}

/** Whether a check names any TLS file. */
export function hasTlsFiles(fields: TlsFileFields): boolean {
  return fields.key !== undefined || fields.cert !== undefined || fields.cacert !== undefined;
}

/**
 * Reads the files a check names.
 * @throws TlsFileError when one cannot be read
 */
export async function readTlsFiles(fields: TlsFileFields): Promise<TlsFiles> {
  const [key, cert, ca] = await Promise.all([
    read("key", fields.key),
    read("cert", fields.cert),
    read("cacert", fields.cacert),
  ]);
  const files: TlsFiles = {};
  if (key !== undefined) files.key = key;
  if (cert !== undefined) files.cert = cert;
  if (ca !== undefined) files.ca = ca;
  return files;
}
