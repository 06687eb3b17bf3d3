import type { ServerResponse as Response } from 'http';

/** Lines are sent in chunks of about this many characters: fewer syscalls, bounded memory. */
const CHUNK_CHARS = 64 * 1024;

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

export interface LineSource {
  [Symbol.asyncIterator](): AsyncIterator<{ json?: string | null }>;
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
  let chunk = '';
  const send = (text: string): boolean => {
    bytes += Buffer.byteLength(text);
    return res.write(text);
  };
  try {
    for await (const doc of source) {
      if (aborted) break;
      if (typeof doc.json !== 'string') continue;
      chunk += `${doc.json}\n`;
      lines += 1;
      if (chunk.length >= CHUNK_CHARS) {
        const flushed = send(chunk);
        chunk = '';
        if (!flushed) await writable(res);
        if (res.destroyed) aborted = true;
      }
    }
    if (!aborted) {
      if (chunk) send(chunk);
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
