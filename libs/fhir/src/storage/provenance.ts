import type { FhirVersion } from '../definitions/fhir-version';

/**
 * The Provenance stored beside every create/update of a non-Provenance resource (docs/api.md §5):
 * one per single write, one per transaction/batch listing every resource it wrote (`target` 1..*
 * in every version), in the shape of each FHIR version:
 * - R4 https://hl7.org/fhir/R4/provenance.html: `target`, `recorded`, `activity` (CodeableConcept,
 *   v3-DataOperation), `agent.who` (Reference).
 * - STU3 https://hl7.org/fhir/STU3/provenance.html: `activity` is a Coding, `agent.whoReference`.
 * - DSTU2 https://hl7.org/fhir/DSTU2/provenance.html: `activity` CodeableConcept, `agent.role`
 *   (required Coding), `agent.actor` and `agent.userId`: a DSTU2 Reference has no `identifier`, so the
 *   client id goes into `userId`.
 */

export type ProvenanceActivity = 'create' | 'update';

export interface ProvenanceInput {
  version: FhirVersion;
  id: string;
  /** Versioned references of the targets, `Type/id/_history/vid` (at least one). */
  targets: readonly string[];
  recorded: string;
  activity: ProvenanceActivity;
  /** client_id of the application that wrote the target: the agent. */
  clientId: string;
}

/** System of the identifier that names the client application acting as agent. */
export const CLIENT_IDENTIFIER_SYSTEM = 'urn:fhir-data-service:client-id';

const DATA_OPERATION = {
  r4: 'http://terminology.hl7.org/CodeSystem/v3-DataOperation',
  stu3: 'http://hl7.org/fhir/v3/DataOperation',
  dstu2: 'http://hl7.org/fhir/v3/DataOperation',
} as const;

export function buildProvenance(input: ProvenanceInput): Record<string, unknown> {
  const code = input.activity === 'create' ? 'CREATE' : 'UPDATE';
  const coding = { system: DATA_OPERATION[input.version], code, display: input.activity };
  const who = {
    identifier: { system: CLIENT_IDENTIFIER_SYSTEM, value: input.clientId },
    display: input.clientId,
  };
  const base = {
    resourceType: 'Provenance',
    id: input.id,
    target: input.targets.map((reference) => ({ reference })),
    recorded: input.recorded,
  };
  switch (input.version) {
    case 'r4':
      return {
        ...base,
        activity: { coding: [coding] },
        agent: [
          {
            type: {
              coding: [
                {
                  system: 'http://terminology.hl7.org/CodeSystem/provenance-participant-type',
                  code: 'author',
                },
              ],
            },
            who,
          },
        ],
      };
    case 'stu3':
      return {
        ...base,
        activity: coding,
        agent: [
          {
            role: [
              { coding: [{ system: 'http://hl7.org/fhir/provenance-participant-role', code: 'author' }] },
            ],
            whoReference: who,
          },
        ],
      };
    case 'dstu2':
      return {
        ...base,
        activity: { coding: [coding] },
        agent: [
          {
            role: { system: 'http://hl7.org/fhir/provenance-participant-role', code: 'author' },
            actor: { display: input.clientId },
            userId: who.identifier,
          },
        ],
      };
  }
}
