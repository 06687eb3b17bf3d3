import 'reflect-metadata';
import { parseSettings, Settings, SettingsError } from './config/settings';
import { createApp } from './create-app';
import { resolveDatabase } from './database/embedded-database';

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
  const database = await resolveDatabase(settings.mongoUrl, settings.dataDir).catch((e: Error) => {
    process.stderr.write(`${e.message}\n`);
    process.exit(3);
  });
  let app;
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
    `FHIR data service listening on ${url} (engine: ${database.engine}, ${Date.now() - started} ms)\n`,
  );
}

void main();
