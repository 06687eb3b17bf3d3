import { execFile } from 'child_process';
import { createServer } from 'net';
import { join } from 'path';
import { promisify } from 'util';
import { validateResource, type FhirVersion } from '@app/fhir';
import { createClient, createTestApp, createUser, IDENTITY_TEST_ENV, TestApp } from '@app/testing';

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The real fhir-kit-client 2.0.3 from npm, unmodified, against the server over HTTP on R4, STU3 and
 * DSTU2 (test/clients/fhir-kit-scenarios.mjs; ESM only, so in its own Node process). Every kind of
 * body the scenarios received is validated against the base spec with the project's validator.
 */
describe('fhir-kit-client (e2e, real client over HTTP)', () => {
  let t: TestApp;
  let token: string;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ ...IDENTITY_TEST_ENV, BASE_URL: base, AUTH_URL: base });
    await t.app.listen(port, '127.0.0.1');
    const client = await createClient(t);
    token = (await createUser(t, client)).access_token;
  });
  afterAll(async () => t?.close());

  const RESOURCE_TYPE: Record<string, string> = {
    searchset: 'Bundle',
    everything: 'Bundle',
    history: 'Bundle',
    transactionResponse: 'Bundle',
    operationOutcome: 'OperationOutcome',
    provenance: 'Provenance',
  };

  for (const version of ['r4', 'stu3', 'dstu2'] as FhirVersion[]) {
    it(`${version}: CRUD, paging, history, transaction, conditional create, patch, compartment search, POST $everything, smartAuthMetadata`, async () => {
      const { stdout } = await run(process.execPath, [join(__dirname, 'clients', 'fhir-kit-scenarios.mjs')], {
        env: { ...process.env, FHIR_BASE: `${base}/${version}`, TOKEN: token, VERSION: version },
        timeout: 60_000,
      });
      const { scenarios, bodies } = JSON.parse(stdout) as {
        scenarios: Array<{ name: string; ok: boolean; error?: string }>;
        bodies: Record<string, any>;
      };
      expect(scenarios.filter((s) => !s.ok)).toEqual([]);
      expect(scenarios).toHaveLength(version === 'dstu2' ? 7 : 8);
      const statementType = version === 'dstu2' ? 'Conformance' : 'CapabilityStatement';
      for (const [kind, body] of Object.entries(bodies)) {
        const type = RESOURCE_TYPE[kind] ?? statementType;
        const errors = validateResource(version, body, type).filter((i) => i.severity === 'error');
        expect({ kind, errors }).toEqual({ kind, errors: [] });
      }
      expect(Object.keys(bodies).sort()).toEqual([
        'capabilityStatement',
        'everything',
        'history',
        'operationOutcome',
        'provenance',
        'searchset',
        'transactionResponse',
      ]);
    });
  }
});
