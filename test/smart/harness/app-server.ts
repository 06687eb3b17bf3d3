import { readFileSync } from 'fs';
import { createServer, Server } from 'http';
import { join } from 'path';
import { freePort } from './free-port';

export interface AppServer {
  /** The app's origin, e.g. http://localhost:PORT: another origin (and site) than the FHIR server's 127.0.0.1. */
  origin: string;
  /** The redirect URI to register for the JS app. */
  redirectUri: string;
  /** A redirect URI that only shows the browser landed (for a backend app that reads the URL). */
  callbackUri: string;
  /** The launch page for a standalone launch against `iss`. */
  launchUrl(iss: string, clientId: string, scope: string): string;
  close(): Promise<void>;
}

const FILES: Record<string, { file: string; type: string }> = {
  '/launch.html': { file: join(__dirname, '..', 'app', 'launch.html'), type: 'text/html; charset=utf-8' },
  '/app.html': { file: join(__dirname, '..', 'app', 'app.html'), type: 'text/html; charset=utf-8' },
  // where the confidential (Python) app's browser lands: the test hands this URL to the app
  '/callback': { file: join(__dirname, '..', 'app', 'callback.html'), type: 'text/html; charset=utf-8' },
  // SMART's official JS client, its browser build from node_modules (no CDN)
  '/fhir-client.js': {
    file: require.resolve('fhirclient/build/fhir-client.js'),
    type: 'text/javascript; charset=utf-8',
  },
};

/**
 * A static server for the test SMART app on its own port, reached as `localhost` while the FHIR
 * server is reached as 127.0.0.1: the browser treats them as different origins and sites, so CORS
 * and cookies are as they would be for a real third-party app.
 */
export async function startAppServer(): Promise<AppServer> {
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://app').pathname;
    const entry = FILES[path];
    if (!entry) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res
      .writeHead(200, { 'content-type': entry.type, 'cache-control': 'no-store' })
      .end(readFileSync(entry.file));
  });
  // both loopback addresses (the browser may try ::1 first for localhost); IPv4 alone where IPv6 is off
  await listen(server, { port, host: '::', ipv6Only: false }).catch(() =>
    listen(server, { port, host: '127.0.0.1' }),
  );
  const origin = `http://localhost:${port}`;
  return {
    origin,
    redirectUri: `${origin}/app.html`,
    callbackUri: `${origin}/callback`,
    launchUrl: (iss, clientId, scope) =>
      `${origin}/launch.html?${new URLSearchParams({ iss, client_id: clientId, scope }).toString()}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function listen(server: Server, options: { port: number; host: string; ipv6Only?: boolean }): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (e: Error) => reject(e);
    server.once('error', failed);
    server.listen(options, () => {
      server.off('error', failed);
      resolve();
    });
  });
}
