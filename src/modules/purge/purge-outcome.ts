import {
  FhirVersion,
  issue,
  operationOutcome,
  OperationOutcome,
  OperationOutcomeError,
  OutcomeIssue,
} from '@app/fhir';

/**
 * The OperationOutcomes a purge answers (docs/api.md §9). The first issue sums up;
 * then one issue per resource type whose `expression` is the type name and whose text reads
 * `<Type>: <n> resources, <m> versions`, so a client can read the counts without parsing prose.
 */
export class PurgeTally {
  private readonly byType = new Map<string, { resources: number; versions: number }>();

  add(type: string, resources: number, versions: number): void {
    const entry = this.byType.get(type) ?? { resources: 0, versions: 0 };
    entry.resources += resources;
    entry.versions += versions;
    this.byType.set(type, entry);
  }

  get resources(): number {
    return [...this.byType.values()].reduce((sum, e) => sum + e.resources, 0);
  }

  get versions(): number {
    return [...this.byType.values()].reduce((sum, e) => sum + e.versions, 0);
  }

  typeIssues(verb: string): OutcomeIssue[] {
    return [...this.byType.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([type, e]) => ({
        ...issue('informational', `${type}: ${e.resources} resources, ${e.versions} versions ${verb}`, {
          severity: 'information',
        }),
        expression: [type],
      }));
  }
}

export interface PurgeSubject {
  version: FhirVersion;
  userId: number;
}

function subjectText(subject: PurgeSubject): string {
  return `user ${subject.userId} in ${subject.version.toUpperCase()}`;
}

export function purgeCompletedOutcome(subject: PurgeSubject, tally: PurgeTally): OperationOutcome {
  const summary = `purge of ${subjectText(subject)} complete: removed ${tally.resources} resources and ${tally.versions} versions`;
  return operationOutcome([
    issue('informational', summary, { severity: 'information' }),
    ...tally.typeIssues('removed'),
  ]);
}

export function purgeDryRunOutcome(subject: PurgeSubject, tally: PurgeTally): OperationOutcome {
  const summary =
    `dry run: a purge of ${subjectText(subject)} would remove ${tally.resources} resources and ` +
    `${tally.versions} versions; nothing was deleted`;
  return operationOutcome([
    issue('informational', summary, { severity: 'information' }),
    ...tally.typeIssues('would be removed'),
  ]);
}

/**
 * The budget ran out (or the client went away): what is removed stays removed, and the same
 * request continues. 504 is the status clients of the original service see on a purge timeout.
 */
export function purgeUnfinishedError(
  subject: PurgeSubject,
  tally: PurgeTally,
  budgetMs: number,
  remaining: number | null,
): OperationOutcomeError {
  const left =
    remaining === null
      ? 'the number of matching resources left could not be counted in time'
      : `about ${remaining} matching resources remain`;
  const summary =
    `purge of ${subjectText(subject)} stopped when its ${budgetMs} ms budget ran out: removed ` +
    `${tally.resources} resources and ${tally.versions} versions so far; ${left}; ` +
    'repeat the same request to continue';
  const issues = [issue('timeout', summary), ...tally.typeIssues('removed')];
  return new OperationOutcomeError('timeout', summary, { status: 504, issues });
}
