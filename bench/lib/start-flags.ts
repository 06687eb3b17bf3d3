import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The node flags `npm start` runs the server with (package.json `scripts.start`: `node <flags>
 * dist/src/main.js`; the Dockerfile's CMD carries the same ones). Benchmarks that run the server in
 * a process of its own pass them (as NODE_OPTIONS) so that they measure the server as operators run it.
 */
export function startNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const match = /^node((?: --\S+)*) dist\/src\/main\.js$/.exec(pkg.scripts.start);
  if (!match)
    throw new Error(
      `package.json start script is not "node [--flags] dist/src/main.js": ${pkg.scripts.start}`,
    );
  return match[1].split(' ').filter(Boolean);
}

/** `env` with the start flags added to its NODE_OPTIONS (and this process's). */
export function withStartFlags(env: Record<string, string> = {}): Record<string, string> {
  const options = [env.NODE_OPTIONS ?? process.env.NODE_OPTIONS ?? '', ...startNodeFlags()];
  return { ...env, NODE_OPTIONS: options.filter(Boolean).join(' ') };
}
