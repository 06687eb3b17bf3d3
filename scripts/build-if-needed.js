#!/usr/bin/env node
// `npm start` and `npm run cli` build only when a source file is newer than the last build, so a
// second start is instant and a fresh clone still works.
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const root = path.resolve(__dirname, '..');
const marker = path.join(root, 'dist', 'src', 'main.js');
function newest(dir) {
  let t = 0;
  if (!fs.existsSync(dir)) return t;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith('.ts') || e.name.endsWith('.json')) t = Math.max(t, fs.statSync(p).mtimeMs);
  }
  return t;
}
const built = fs.existsSync(marker) ? fs.statSync(marker).mtimeMs : 0;
const sources = Math.max(newest(path.join(root, 'src')), newest(path.join(root, 'libs')));
if (built >= sources) process.exit(0);
process.stderr.write('building (sources changed since the last build)...\n');
execFileSync(process.execPath, [require.resolve('@nestjs/cli/bin/nest.js'), 'build'], {
  cwd: root,
  stdio: ['ignore', process.stderr, process.stderr],
});
// touch the marker: tsc leaves unchanged outputs alone, so main.js can be older than the sources
const now = new Date();
fs.utimesSync(marker, now, now);
