import { syntheaR4Batches } from '../lib/synthea-load';

/**
 * The comparison scenarios, built from the Synthea R4 sample itself: ids are chosen client-side
 * (each resource keeps its uuid, bench/lib/synthea-load), so the ids, codes, names and dates every
 * query uses are known without asking the server, and any FHIR R4 server loaded with the same
 * bundles answers the same queries.
 */
export type Resource = Record<string, any>;

export interface Scenario {
  name: string;
  connections: number;
  /** Paths relative to the FHIR base, e.g. `Patient/123` or `Observation?patient=…`. */
  paths: string[];
}

export interface PeerData {
  /** The first N patients' records in 20-entry batches (the ingest unit), in file order. */
  batches: Resource[][];
  resources: number;
  refused: number;
}

export function peerData(patients: number): PeerData {
  const { batches, refused } = syntheaR4Batches(1, 20, patients);
  return {
    batches: batches.map((b) => b.resources),
    resources: batches.reduce((n, b) => n + b.resources.length, 0),
    refused,
  };
}

const PATHS_PER_SCENARIO = 2000;

/** Deterministic choice (a fixed seed), so two servers get the same request list. */
function chooser(seed: number): <T>(list: readonly T[]) => T {
  let s = seed >>> 0;
  return <T>(list: readonly T[]): T => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return list[s % list.length];
  };
}

function subjectId(r: Resource): string | undefined {
  const ref = r.subject?.reference ?? r.patient?.reference;
  return typeof ref === 'string' && ref.startsWith('Patient/') ? ref.slice('Patient/'.length) : undefined;
}

function firstCoding(r: Resource): { system: string; code: string } | undefined {
  const c = r.code?.coding?.[0];
  return c?.system && c?.code ? { system: String(c.system), code: String(c.code) } : undefined;
}

function year(value: unknown): number | undefined {
  return typeof value === 'string' && /^\d{4}/.test(value) ? Number(value.slice(0, 4)) : undefined;
}

const enc = encodeURIComponent;

/** The scenarios of the comparison with other servers, over the resources loaded. */
export function peerScenarios(resources: readonly Resource[]): Scenario[] {
  const byType = (t: string) => resources.filter((r) => r.resourceType === t);
  const patients = byType('Patient');
  const observations = byType('Observation');
  const encounters = byType('Encounter');
  const pick = chooser(24);
  const many = (make: () => string) => Array.from({ length: PATHS_PER_SCENARIO }, make);
  const patientIds = patients.map((p) => String(p.id));
  const obsWithCode = observations.filter((o) => subjectId(o) && firstCoding(o) && year(o.effectiveDateTime));
  const encWithDate = encounters.filter((e) => subjectId(e) && year(e.period?.start));
  const families = patients.map((p) => p.name?.[0]?.family).filter((f): f is string => typeof f === 'string');
  return [
    { name: 'read Patient', connections: 32, paths: many(() => `Patient/${pick(patientIds)}`) },
    {
      name: 'read Observation',
      connections: 32,
      paths: many(() => `Observation/${String(pick(observations).id)}`),
    },
    {
      name: 'Observation?patient',
      connections: 8,
      paths: many(() => `Observation?patient=${pick(patientIds)}`),
    },
    {
      name: 'Observation?patient&code',
      connections: 8,
      paths: many(() => {
        const o = pick(obsWithCode);
        const c = firstCoding(o)!;
        return `Observation?patient=${subjectId(o)}&code=${enc(`${c.system}|${c.code}`)}`;
      }),
    },
    {
      name: 'Observation?code&date',
      connections: 8,
      paths: many(() => {
        const o = pick(obsWithCode);
        const c = firstCoding(o)!;
        const y = year(o.effectiveDateTime)!;
        return `Observation?code=${enc(`${c.system}|${c.code}`)}&date=ge${y}-01-01&date=lt${y + 1}-01-01`;
      }),
    },
    { name: 'Condition?patient', connections: 8, paths: many(() => `Condition?patient=${pick(patientIds)}`) },
    { name: 'Patient?name', connections: 8, paths: many(() => `Patient?name=${enc(pick(families))}`) },
    {
      name: 'Encounter?patient&date',
      connections: 8,
      paths: many(() => {
        const e = pick(encWithDate);
        return `Encounter?patient=${subjectId(e)}&date=ge${year(e.period.start)}-01-01`;
      }),
    },
    {
      name: 'Observation?patient&_sort=-date',
      connections: 8,
      paths: many(() => `Observation?patient=${pick(patientIds)}&_sort=-date`),
    },
    {
      name: 'Patient/{id}/$everything',
      connections: 8,
      paths: many(() => `Patient/${pick(patientIds)}/$everything`),
    },
  ];
}
