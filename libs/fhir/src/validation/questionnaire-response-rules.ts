import { findItem, objectsOf } from './questionnaire-rules';
import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

const RULE = 'questionnaireresponse-answer-valueset';

/**
 * A QuestionnaireResponse answers the Questionnaire it names
 * (https://hl7.org/fhir/R4/questionnaireresponse.html#link): with that Questionnaire contained
 * (`questionnaire: "#id"`), a Coding answer to a `choice` or `open-choice` question whose answerValueSet is a ValueSet
 * contained in the response (`#vs`) must be one of that value set's codes, as the reference validator
 * checks it (Questionnaire_QR_Item_BadOption; a Coding without a system is in no value set).
 * Only value sets that list their codes are judged: one drawing on a whole code system, a filter or
 * another value set says nothing here.
 */
export function checkQuestionnaireResponse(
  response: JsonObject,
  path: string,
  issues: ValidationIssue[],
): void {
  const questionnaire = containedById(response, response.questionnaire, 'Questionnaire');
  if (!questionnaire) return;
  const questions = objectsOf(questionnaire.item);
  const visit = (
    items: readonly JsonObject[],
    itemsPath: string,
    level: readonly JsonObject[],
    depth: number,
  ) => {
    if (depth > 100) return;
    items.forEach((item, i) => {
      if (typeof item.linkId !== 'string') return;
      const itemPath = `${itemsPath}[${i}]`;
      // an item out of place is still matched to its question, as the reference does
      const question = level.find((q) => q.linkId === item.linkId) ?? findItem(questions, item.linkId);
      if (!question) return;
      const inner = objectsOf(question.item);
      objectsOf(item.answer).forEach((answer, a) => {
        checkAnswer(response, question, answer, `${itemPath}.answer[${a}]`, issues);
        visit(objectsOf(answer.item), `${itemPath}.answer[${a}].item`, inner, depth + 1);
      });
      visit(objectsOf(item.item), `${itemPath}.item`, inner, depth + 1);
    });
  };
  visit(objectsOf(response.item), `${path}.item`, questions, 0);
}

function checkAnswer(
  response: JsonObject,
  question: JsonObject,
  answer: JsonObject,
  path: string,
  issues: ValidationIssue[],
): void {
  const coding = answer.valueCoding as JsonObject | undefined;
  // open-choice too: its free-text alternative is valueString; a Coding answer is held to the value set
  if ((question.type !== 'choice' && question.type !== 'open-choice') || typeof coding?.code !== 'string')
    return;
  const valueSet = containedById(response, question.answerValueSet, 'ValueSet');
  const codes = valueSet && listedCodes(valueSet);
  if (!codes) return;
  const system = typeof coding.system === 'string' ? coding.system : undefined;
  if (system !== undefined && codes.get(system)?.has(coding.code)) return;
  issues.push(
    errorIssue(
      'code-invalid',
      path,
      `The code '${coding.code}' in the system '${system ?? 'null'}' is not in the options value set (${String(valueSet.id)}) specified by the questionnaire`,
      RULE,
    ),
  );
}

/** The contained resource of that type a `#id` reference names. */
function containedById(response: JsonObject, reference: unknown, type: string): JsonObject | undefined {
  if (typeof reference !== 'string' || !reference.startsWith('#')) return undefined;
  const id = reference.slice(1);
  return objectsOf(response.contained).find((c) => c.resourceType === type && c.id === id);
}

/**
 * system → codes of a value set that lists them: its expansion, or a compose made only of listed
 * concepts (minus listed exclusions); undefined for any other value set.
 */
function listedCodes(valueSet: JsonObject): Map<string, Set<string>> | undefined {
  const expansion = valueSet.expansion as JsonObject | undefined;
  if (expansion) return expandedCodes(objectsOf(expansion.contains), new Map(), 0);
  const compose = valueSet.compose as JsonObject | undefined;
  const includes = objectsOf(compose?.include);
  if (includes.length === 0) return undefined;
  const codes = new Map<string, Set<string>>();
  for (const include of includes) {
    const concepts = objectsOf(include.concept);
    const listedOnly = include.filter === undefined && include.valueSet === undefined && concepts.length > 0;
    if (typeof include.system !== 'string' || !listedOnly) return undefined;
    const set = codes.get(include.system) ?? new Set<string>();
    for (const concept of concepts) if (typeof concept.code === 'string') set.add(concept.code);
    codes.set(include.system, set);
  }
  for (const exclude of objectsOf(compose?.exclude)) {
    const concepts = objectsOf(exclude.concept);
    if (typeof exclude.system !== 'string' || exclude.filter !== undefined || exclude.valueSet !== undefined)
      return undefined;
    if (concepts.length === 0) codes.delete(exclude.system);
    for (const concept of concepts)
      if (typeof concept.code === 'string') codes.get(exclude.system)?.delete(concept.code);
  }
  return codes;
}

function expandedCodes(
  contains: readonly JsonObject[],
  into: Map<string, Set<string>>,
  depth: number,
): Map<string, Set<string>> {
  if (depth > 100) return into;
  for (const entry of contains) {
    if (typeof entry.system === 'string' && typeof entry.code === 'string') {
      const set = into.get(entry.system) ?? new Set<string>();
      set.add(entry.code);
      into.set(entry.system, set);
    }
    expandedCodes(objectsOf(entry.contains), into, depth + 1);
  }
  return into;
}
