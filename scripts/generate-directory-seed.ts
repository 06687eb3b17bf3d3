/**
 * Builds seed/directory-seed.ndjson from the Synthea R4 sample (issue 8 item 5):
 * - every hospital Organization of `hospitalInformation*.json` (real Massachusetts hospitals with
 *   their names and addresses) as a `HealthSystem` entry, keyed by its Synthea id;
 * - every payer named by the Claims' `insurance[].coverage.display` (Medicare, Medicaid, …; not
 *   NO_INSURANCE) twice: as `Payer2Payer` and as `PayerPatientAccess`.
 * Output is sorted by id, so a re-run on the same archive gives the same file.
 *
 * Run: npx ts-node --transpile-only scripts/generate-directory-seed.ts [archive] [out]
 *   (defaults: ../shared/data/synthea/synthea-r4.tgz, seed/directory-seed.ndjson)
 * The app never reads the archive: it loads the committed seed file.
 */
import { execFileSync } from 'child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'fs';
import { tmpdir } from 'os';
import { dirname, join, resolve } from 'path';

interface SeedEntry {
  id: string;
  name: string;
  system_type: 'HealthSystem' | 'Payer2Payer' | 'PayerPatientAccess';
  address: { line: string[]; city: string | null; state: string | null; postalCode: string | null };
  ehr: null;
  fhir_base_url: null;
  logo: null;
  status: 'active' | 'inactive';
}

const root = resolve(__dirname, '..');
const archive = resolve(process.argv[2] ?? join(root, '..', 'shared', 'data', 'synthea', 'synthea-r4.tgz'));
const out = resolve(process.argv[3] ?? join(root, 'seed', 'directory-seed.ndjson'));

function bundleResources(file: string): any[] {
  const bundle = JSON.parse(readFileSync(file, 'utf8'));
  return (bundle.entry ?? []).map((e: any) => e.resource).filter(Boolean);
}

function hospitals(files: string[]): SeedEntry[] {
  const entries: SeedEntry[] = [];
  for (const file of files) {
    for (const org of bundleResources(file)) {
      if (org.resourceType !== 'Organization' || typeof org.name !== 'string') continue;
      const address = org.address?.[0] ?? {};
      entries.push({
        id: org.id,
        name: org.name.trim(),
        system_type: 'HealthSystem',
        address: {
          line: (address.line ?? []).map((l: string) => l.trim()).filter(Boolean),
          city: address.city ?? null,
          state: address.state ?? null,
          postalCode: address.postalCode ?? null,
        },
        ehr: null,
        fhir_base_url: null,
        logo: null,
        status: org.active === false ? 'inactive' : 'active',
      });
    }
  }
  return entries;
}

function payerNames(patientFiles: string[]): string[] {
  const names = new Set<string>();
  for (const file of patientFiles) {
    for (const res of bundleResources(file)) {
      if (res.resourceType !== 'Claim') continue;
      for (const insurance of res.insurance ?? []) {
        const name = insurance.coverage?.display;
        if (typeof name === 'string' && name !== 'NO_INSURANCE') names.add(name.trim());
      }
    }
  }
  return [...names];
}

function payers(names: string[]): SeedEntry[] {
  const slug = (name: string) =>
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');
  const empty = { line: [], city: null, state: null, postalCode: null };
  return names
    .flatMap((name) => [
      { id: `payer-${slug(name)}-p2p`, name, system_type: 'Payer2Payer' as const },
      { id: `payer-${slug(name)}-patient-access`, name, system_type: 'PayerPatientAccess' as const },
    ])
    .map((p) => ({
      ...p,
      address: empty,
      ehr: null,
      fhir_base_url: null,
      logo: null,
      status: 'active' as const,
    }));
}

function main(): void {
  const dir = mkdtempSync(join(tmpdir(), 'directory-seed-'));
  try {
    execFileSync('tar', ['xzf', archive, '-C', dir]);
    const folder = join(dir, readdirSync(dir).find((d) => d.startsWith('r4')) ?? 'r4');
    const files = readdirSync(folder).filter((f) => f.endsWith('.json'));
    const hospitalFiles = files
      .filter((f) => f.startsWith('hospitalInformation'))
      .map((f) => join(folder, f));
    const patientFiles = files
      .filter((f) => !/^(hospital|practitioner|group)Information/.test(f))
      .map((f) => join(folder, f));
    const entries = [...hospitals(hospitalFiles), ...payers(payerNames(patientFiles))].sort((a, b) =>
      a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
    );
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const byType = entries.reduce<Record<string, number>>((acc, e) => {
      acc[e.system_type] = (acc[e.system_type] ?? 0) + 1;
      return acc;
    }, {});
    process.stdout.write(`${out}: ${entries.length} entries ${JSON.stringify(byType)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
