import type { ServerResponse as Response } from 'http';

/** Lines are sent in chunks of about this many bytes: fewer syscalls, bounded memory. */
const CHUNK_BYTES = 64 * 1024;
const NEWLINE = Buffer.from('\n');

/** Resolves on 'drain' or 'close', whichever comes first, and removes both listeners. */
function writable(res: Response): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed || res.writableEnded) {
      resolve();
      return;
    }
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** The UTF-8 bytes of each stored resource (null for a tombstone, which is skipped). */
export interface LineSource {
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array | null>;
  close(): Promise<void>;
}

/**
 * Streams `application/fhir+ndjson`, one stored resource JSON per line, with constant memory: waits
 * for 'drain' whenever the socket buffer is full, and closes the database cursor as soon as the
 * client goes away. A failure before the first byte is thrown; one after it destroys the socket, so a client never mistakes a
 * truncated file for a complete one.
 */
export async function streamNdjson(
  res: Response,
  source: LineSource,
): Promise<{ lines: number; bytes: number }> {
  let aborted = false;
  const onClose = () => {
    if (!res.writableFinished) aborted = true;
    void source.close().catch(() => undefined);
  };
  res.on('close', onClose);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/fhir+ndjson');
  res.setHeader('Cache-Control', 'no-store');
  let lines = 0;
  let bytes = 0;
  // the lines of the next chunk: views into the driver's reply buffers, copied once by concat
  let parts: Uint8Array[] = [];
  let partBytes = 0;
  const flush = (): boolean => {
    const chunk = Buffer.concat(parts, partBytes);
    parts = [];
    partBytes = 0;
    bytes += chunk.length;
    return res.write(chunk);
  };
  try {
    for await (const line of source) {
      if (aborted) break;
      if (line === null) continue;
      parts.push(line, NEWLINE);
      partBytes += line.length + 1;
      lines += 1;
      if (partBytes >= CHUNK_BYTES) {
        if (!flush()) await writable(res);
        if (res.destroyed) aborted = true;
      }
    }
    if (!aborted) {
      if (partBytes > 0) flush();
      res.end();
    }
  } catch (err) {
    // Before the first byte the exception filter can still answer properly (e.g. 503).
    if (!res.headersSent) throw err;
    if (!aborted) res.destroy(err as Error);
  } finally {
    res.off('close', onClose);
    await source.close().catch(() => undefined);
  }
  return { lines, bytes };
}
