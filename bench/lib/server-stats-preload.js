'use strict';
/**
 * Preloaded into a server process by benchmarks (`node --require <this file> dist/src/main.js`,
 * see bench/soak.ts): on SIGWINCH it writes the process's memory (process.memoryUsage) and the
 * event-loop delay since the previous signal (perf_hooks.monitorEventLoopDelay) as JSON to
 * PROCESS_STATS_FILE, so a benchmark reads the server's heap without changing the server.
 * SIGWINCH because it is ignored by default and nobody else listens to it: NestJS's shutdown hooks
 * take SIGUSR2 (and SIGTERM, SIGHUP…) as "shut down", and SIGUSR1 starts Node's inspector.
 * https://nodejs.org/api/perf_hooks.html#perf_hooksmonitoreventloopdelayoptions
 */
const { renameSync, writeFileSync } = require('node:fs');
const { monitorEventLoopDelay } = require('node:perf_hooks');

const file = process.env.PROCESS_STATS_FILE;
if (file) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  process.on('SIGWINCH', () => {
    const m = process.memoryUsage();
    const stats = {
      at: Date.now(),
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      eventLoopDelayP50Ms: ms(delay.percentile(50)),
      eventLoopDelayP99Ms: ms(delay.percentile(99)),
      eventLoopDelayMaxMs: ms(delay.max),
    };
    delay.reset();
    writeFileSync(`${file}.tmp`, JSON.stringify(stats));
    renameSync(`${file}.tmp`, file);
  });
}
