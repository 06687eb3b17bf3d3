import { monitorEventLoopDelay } from 'perf_hooks';

/**
 * The longest the event loop of this process (which hosts the app under test) was held while `work`
 * ran, in milliseconds. Measured by timer lateness at 10 ms resolution, so it includes what other
 * processes on a loaded machine take from us: compare against a benign run in the same test.
 */
export async function longestLoopBlockMs(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  try {
    await work();
  } finally {
    histogram.disable();
  }
  return histogram.max / 1e6;
}
