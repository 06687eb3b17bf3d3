import { execFileSync } from 'child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'fs';
import { tmpdir } from 'os';
import { dirname, join } from 'path';
import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { bearer, createClient, createUser, TestUser } from '@app/testing/factories';

const ROOT = join(__dirname, '..');
const DOC = readFileSync(join(ROOT, 'docs/extending.md'), 'utf8');
const OPERATIONS_MODULE = 'src/modules/fhir-operations/fhir-operations.module.ts';

/** The `nest g` commands of the doc's bash block, as argument lists. */
function documentedCommands(): string[][] {
  return DOC.split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('npx nest g '))
    .map((line) => line.split(/\s+/).slice(1));
}

/** Each file the doc gives whole: a line naming `src/…ts` and ending in a colon, then a ts block. */
function documentedFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const pattern = /`(src\/[^`]+\.ts)`:\n\s*```ts\n([\s\S]*?)\n\s*```/g;
  for (const [, path, block] of DOC.matchAll(pattern)) {
    files.set(path, block.replace(/^ {3}/gm, '') + '\n');
  }
  return files;
}

/** The text as `npm run format` leaves it (the repository's Prettier settings). */
function formatted(path: string, text: string): string {
  return execFileSync('npx', ['prettier', '--stdin-filepath', join(ROOT, path)], {
    cwd: ROOT,
    input: text,
    encoding: 'utf8',
  });
}

/** docs/extending.md, followed as written, builds the example operation of the repository. */
describe('the extension path of docs/extending.md (e2e)', () => {
  it('its Nest CLI commands, then its files, give exactly the $meta operation in the repository', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'extending-'));
    try {
      for (const file of ['nest-cli.json', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
        cpSync(join(ROOT, file), join(dir, file));
      }
      symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'));
      // the operations module as it was before the example was added
      const before = readFileSync(join(ROOT, OPERATIONS_MODULE), 'utf8')
        .replace("import { MetaModule } from './meta/meta.module';\n", '')
        .replace(', MetaModule]', ']');
      expect(before).not.toContain('MetaModule');
      mkdirSync(dirname(join(dir, OPERATIONS_MODULE)), { recursive: true });
      writeFileSync(join(dir, OPERATIONS_MODULE), before);

      const commands = documentedCommands();
      expect(commands).toHaveLength(3);
      for (const args of commands) {
        execFileSync('npx', args, { cwd: dir, stdio: 'pipe', timeout: 120_000 });
      }
      const files = documentedFiles();
      expect([...files.keys()].sort()).toEqual([
        'src/modules/fhir-operations/meta/meta.controller.ts',
        'src/modules/fhir-operations/meta/meta.module.ts',
        'src/modules/fhir-operations/meta/meta.service.ts',
      ]);
      for (const [path, text] of files) writeFileSync(join(dir, path), text);
      for (const path of [...files.keys(), OPERATIONS_MODULE]) {
        const built = formatted(path, readFileSync(join(dir, path), 'utf8'));
        expect([path, built]).toEqual([path, readFileSync(join(ROOT, path), 'utf8')]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  describe('the operation it builds', () => {
    let t: TestApp;
    let user: TestUser;
    let id: string;
    beforeAll(async () => {
      t = await createTestApp({ USER_MGMT_RATE_LIMIT: '100000' });
      user = await createUser(t, await createClient(t));
      const created = await request(t.server)
        .post('/r4/Patient')
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(JSON.stringify({ resourceType: 'Patient', meta: { tag: [{ system: 'urn:t', code: 'a' }] } }))
        .expect(201);
      id = created.body.id;
    });
    afterAll(async () => t?.close());

    const get = (path: string) => request(t.server).get(path).set(bearer(user.access_token));

    it('answers 200 application/fhir+json with the meta, by GET and by POST', async () => {
      const res = await get(`/r4/Patient/${id}/$meta`).expect(200);
      expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
      expect(res.body).toMatchObject({
        resourceType: 'Parameters',
        parameter: [{ name: 'return', valueMeta: { versionId: '1', tag: [{ system: 'urn:t', code: 'a' }] } }],
      });
      const post = await request(t.server)
        .post(`/r4/Patient/${id}/$meta`)
        .set(bearer(user.access_token))
        .expect(200);
      expect(post.body).toEqual(res.body);
    });

    it('a bad version or type → 404, a bad id → 400, an unknown resource → 404: OperationOutcomes', async () => {
      for (const [path, status] of [
        [`/r9/Patient/${id}/$meta`, 404],
        [`/r4/Nope/${id}/$meta`, 404],
        ['/r4/Patient/bad_id!/$meta', 400],
        ['/r4/Patient/unknown-id/$meta', 404],
      ] as const) {
        const res = await get(path);
        expect([path, res.status]).toEqual([path, status]);
        expect(res.headers['content-type']).toMatch(/^application\/fhir\+json/);
        expect(res.body.resourceType).toBe('OperationOutcome');
      }
      // before the credentials: a route that does not exist says so to anyone
      await request(t.server).get(`/r9/Patient/${id}/$meta`).expect(404);
    });

    it('an Accept the server cannot answer → 406 OperationOutcome', async () => {
      const res = await get(`/r4/Patient/${id}/$meta`).set('Accept', 'application/fhir+xml').expect(406);
      expect(res.body.resourceType).toBe('OperationOutcome');
    });

    it('the CapabilityStatement lists it on every type, with its definition', async () => {
      const res = await request(t.server).get('/r4/metadata').expect(200);
      const resources = res.body.rest[0].resource as Array<{ type: string; operation?: any[] }>;
      for (const type of ['Patient', 'Observation']) {
        const entry = resources.find((r) => r.type === type)!;
        expect(entry.operation).toEqual(
          expect.arrayContaining([
            { name: 'meta', definition: 'http://hl7.org/fhir/OperationDefinition/Resource-meta' },
          ]),
        );
      }
    });
  });
});
