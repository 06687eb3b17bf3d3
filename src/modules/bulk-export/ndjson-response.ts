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

/**
 * The UTF-8 bytes of each stored resource (null for a tombstone, which is skipped), a batch at a
 * time: one await per database batch, not per line.
 */
export interface LineSource {
  [Symbol.asyncIterator](): AsyncIterator<ReadonlyArray<Uint8Array | null>>;
  close(): Promise<void>;
}

/**
 * Reused output chunks. Each batch of lines is copied into chunks before it is written; a chunk goes
 * back here once the socket is done with it (the write's callback), so a download does not allocate
 * a fresh 64 KB buffer per chunk. Fresh buffers live outside the V8 heap: measured at 115k
 * resources over 4 connections, that churn (with the driver's own reply buffers) let the server's
 * external memory grow by tens of MB before a garbage collection freed it (measured).
 */
const POOLED_CHUNKS = 64;
const chunkPool: Buffer[] = [];

function takeChunk(): Buffer {
  return chunkPool.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
}

function giveBack(chunk: Buffer): void {
  if (chunk.length === CHUNK_BYTES && chunkPool.length < POOLED_CHUNKS) chunkPool.push(chunk);
}

/** A chunk to write: `bytes` of `buffer`, which goes back to the pool once written when `pooled`. */
interface Chunk {
  buffer: Buffer;
  bytes: number;
  pooled: boolean;
}

/** The lines of one batch, each followed by a newline, as chunks of at most CHUNK_BYTES (a longer line: its own). */
function packLines(batch: ReadonlyArray<Uint8Array | null>): { chunks: Chunk[]; lines: number } {
  const chunks: Chunk[] = [];
  let current: Chunk | null = null;
  let lines = 0;
  for (const line of batch) {
    if (line === null) continue;
    lines += 1;
    const size = line.length + 1;
    if (size > CHUNK_BYTES) {
      chunks.push({ buffer: Buffer.concat([line, NEWLINE]), bytes: size, pooled: false });
      current = null; // the lines after it go into a chunk after it
      continue;
    }
    if (!current || current.bytes + size > CHUNK_BYTES) {
      current = { buffer: takeChunk(), bytes: 0, pooled: true };
      chunks.push(current);
    }
    current.buffer.set(line, current.bytes);
    current.buffer[current.bytes + line.length] = 0x0a;
    current.bytes += size;
  }
  return { chunks, lines };
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
  try {
    for await (const batch of source) {
      if (aborted) break;
      // The batch becomes chunks before the first await: the per-line objects die young (a
      // scavenge), instead of living through socket waits into the old generation (measured:
      // +80 MB of heap during a 77k-resource export when lines were held across awaits).
      const packed = packLines(batch);
      lines += packed.lines;
      for (const [i, chunk] of packed.chunks.entries()) {
        if (res.destroyed || aborted) {
          aborted = true;
          // the chunks not handed to the socket are free again
          for (const left of packed.chunks.slice(i)) if (left.pooled) giveBack(left.buffer);
          break;
        }
        bytes += chunk.bytes;
        const data = chunk.buffer.subarray(0, chunk.bytes);
        const written = chunk.pooled ? res.write(data, () => giveBack(chunk.buffer)) : res.write(data);
        if (!written) await writable(res);
      }
    }
    if (!aborted) res.end();
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
