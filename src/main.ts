import 'reflect-metadata';
import { loadDefinitions } from '@app/fhir';
import { parseSettings, Settings, SettingsError } from './config/settings';
import { createApp } from './create-app';
import { DatabaseHandle, resolveDatabase } from './database/embedded-database';
import { DataDirInUseError } from './database/embedded-instance';

function loadSettingsOrExit(): Settings {
  try {
    return parseSettings(process.env);
  } catch (e) {
    if (e instanceof SettingsError) {
      process.stderr.write(
        `Refusing to start, bad settings:\n${e.problems.map((p) => `  - ${p}`).join('\n')}\n`,
      );
      process.exit(2);
    }
    throw e;
  }
}

async function main(): Promise<void> {
  const settings = loadSettingsOrExit();
  const started = Date.now();
  let app: Awaited<ReturnType<typeof createApp>> | undefined;
  let stopDatabase = (): Promise<void> => Promise.resolve();
  // The embedded database's supervisor gave up: stop everything and exit non-zero, so that the
  // process supervisor (systemd, Kubernetes) restarts the whole service.
  const giveUp = (error: Error) => {
    process.stderr.write(`Stopping: ${error.message}\n`);
    void (app ? app.close() : stopDatabase()).catch(() => undefined).finally(() => process.exit(1));
  };
  const { mongoUrl, dataDir, engine } = settings;
  const resolving = resolveDatabase(mongoUrl, dataDir, engine, {
    role: 'server',
    onGiveUp: giveUp,
  }).catch((e: Error) => {
    process.stderr.write(`${e.message}\n`);
    process.exit(e instanceof DataDirInUseError ? 4 : 3);
  });
  // The FHIR definitions are loaded before the server listens (about 0.8 s added to start-up: the
  // engine's start waits on this event loop too, so little of it overlaps): otherwise the first
  // requests of each version would load them, blocking every request for about half a second.
  const definitions = loadDefinitions();
  const database: DatabaseHandle = await resolving;
  stopDatabase = () => database.stop();
  try {
    app = await createApp(settings, database);
    await app.listen(settings.port, settings.host);
  } catch (e) {
    process.stderr.write(`Start-up failed: ${(e as Error).message}\n`);
    await database.stop();
    process.exit(1);
  }
  const url = await app.getUrl();
  process.stderr.write(
    `FHIR data service listening on ${url} (engine: ${database.engine}, ${Date.now() - started} ms; ` +
      `FHIR definitions loaded in ${Object.entries(definitions)
        .map(([version, ms]) => `${version} ${ms}`)
        .join(', ')} ms)\n`,
  );
}

void main();
