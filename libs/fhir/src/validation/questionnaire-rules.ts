import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

const RULE = 'questionnaire-enableWhen';

export function objectsOf(value: unknown): JsonObject[] {
  return Array.isArray(value)
    ? value.filter((v): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v))
    : [];
}

/** The first item with that linkId among `items` and their descendants (document order). */
export function findItem(items: readonly JsonObject[], linkId: string, depth = 0): JsonObject | undefined {
  if (depth > 100) return undefined;
  for (const item of items) {
    if (item.linkId === linkId) return item;
    const inner = findItem(objectsOf(item.item), linkId, depth + 1);
    if (inner) return inner;
  }
  return undefined;
}

/**
 * `Questionnaire.item.enableWhen.question` names the linkId of another question of the same
 * Questionnaire (R4 https://hl7.org/fhir/R4/questionnaire-definitions.html#Questionnaire.item.enableWhen.question):
 * it must exist, must not be the item itself, and must not be nested inside the item (whose answers
 * exist only once the item is enabled). The reference validator's Questionnaire rules, R4 onwards.
 */
export function checkQuestionnaire(questionnaire: JsonObject, path: string, issues: ValidationIssue[]): void {
  const top = objectsOf(questionnaire.item);
  const visit = (items: readonly JsonObject[], itemsPath: string, depth: number): void => {
    if (depth > 100) return;
    items.forEach((item, i) => {
      const itemPath = `${itemsPath}[${i}]`;
      objectsOf(item.enableWhen).forEach((condition, c) => {
        const question = condition.question;
        if (typeof question !== 'string') return;
        const where = `${itemPath}.enableWhen[${c}].question`;
        if (findItem(objectsOf(item.item), question)) {
          issues.push(
            errorIssue(
              'invalid',
              where,
              `enableWhen cannot refer to '${question}', a question nested inside this item`,
              RULE,
            ),
          );
          return;
        }
        const target = findItem(top, question);
        if (!target)
          issues.push(
            errorIssue(
              'invalid',
              where,
              `enableWhen refers to '${question}', which is not an item here`,
              RULE,
            ),
          );
        else if (target === item)
          issues.push(errorIssue('invalid', where, 'enableWhen cannot refer to the item itself', RULE));
      });
      visit(objectsOf(item.item), `${itemPath}.item`, depth + 1);
    });
  };
  visit(top, `${path}.item`, 0);
}
