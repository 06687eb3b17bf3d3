import { spawn } from 'child_process';
import { existsSync } from 'fs';
import { join, resolve } from 'path';

/** The new DocumentDB kit's installer when the project sits beside the team's shared folder. */
export function kitBeside(projectDir: string): string | undefined {
  const script = resolve(projectDir, '..', 'shared', 'engines', 'documentdb-next', 'install.sh');
  return existsSync(script) ? script : undefined;
}

/**
 * Runs the kit's installer (root; apt packages and /opt/documentdb-next, ~15 s), passing each line
 * of its output on as it comes, so the wait is visible. Rejects with its last lines when it fails.
 */
export function installKitBeside(script: string, progress: (line: string) => void): Promise<void> {
  progress(`no DocumentDB found: installing the kit with \`bash ${script}\``);
  return new Promise((done, fail) => {
    const child = spawn('bash', [script], { cwd: join(script, '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    let partial = '';
    const lines = (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const all = text.split('\n');
      partial = all.pop() ?? '';
      for (const line of all.filter((l) => l.trim())) {
        progress(line);
        tail.push(line);
        if (tail.length > 10) tail.shift();
      }
    };
    child.stdout.on('data', lines);
    child.stderr.on('data', lines);
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0
        ? done()
        : fail(new Error(`installing the DocumentDB kit failed (exit ${code}): ${tail.join(' | ')}`)),
    );
  });
}
