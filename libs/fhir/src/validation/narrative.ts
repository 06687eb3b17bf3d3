import { SaxesParser, type SaxesTagPlain } from 'saxes';

/**
 * Narrative XHTML rules (https://hl7.org/fhir/R4/narrative.html#xhtml, invariants txt-1 and txt-2):
 * well-formed XML, root `div` in the XHTML namespace, only the basic HTML elements and attributes the
 * spec lists (the same lists as the reference validator), no scripts, event handlers, `javascript:`
 * URLs or processing instructions, and some text or an image. Parsed with saxes, an XML parser.
 */
const XHTML_NS = 'http://www.w3.org/1999/xhtml';

// prettier-ignore
const ELEMENTS = new Set([
  'p', 'br', 'div', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'a', 'span', 'b', 'em', 'i', 'strong', 'small',
  'big', 'tt', 'dfn', 'q', 'var', 'abbr', 'acronym', 'cite', 'blockquote', 'hr', 'address', 'bdo', 'kbd',
  'sub', 'sup', 'ul', 'ol', 'li', 'dl', 'dt', 'dd', 'pre', 'table', 'caption', 'colgroup', 'col', 'thead',
  'tr', 'tfoot', 'tbody', 'th', 'td', 'code', 'samp', 'img', 'map', 'area',
]);

// prettier-ignore
const ANY_ELEMENT_ATTRIBUTES = new Set([
  'title', 'style', 'class', 'id', 'idref', 'lang', 'xml:lang', 'dir', 'accesskey', 'tabindex', 'span',
  'width', 'align', 'valign', 'char', 'charoff', 'abbr', 'axis', 'headers', 'scope', 'rowspan', 'colspan',
  'xmlns', 'xml:space',
]);

// prettier-ignore
const ELEMENT_ATTRIBUTES = new Set([
  'a.href', 'a.name', 'a.charset', 'a.type', 'a.hreflang', 'a.rel', 'a.rev', 'a.shape', 'a.coords',
  'img.src', 'img.border', 'img.alt', 'img.longdesc', 'img.height', 'img.width', 'img.usemap', 'img.ismap',
  'blockquote.cite', 'q.cite', 'map.name', 'area.shape', 'area.coords', 'area.href', 'area.nohref',
  'area.alt', 'table.summary', 'table.width', 'table.border', 'table.frame', 'table.rules',
  'table.cellspacing', 'table.cellpadding', 'pre.space', 'td.nowrap',
]);

/** Block elements a `p` cannot hold (XHTML content model, as the reference checks). */
const NOT_IN_PARAGRAPH = new Set(['div', 'blockquote', 'table', 'ol', 'ul', 'p']);

const URL_ATTRIBUTES = new Set(['href', 'src', 'longdesc', 'cite', 'usemap']);

/** The narrative rule a div breaks, or undefined when it is fine. */
export interface NarrativeProblem {
  readonly rule: 'txt-1' | 'txt-2';
  readonly message: string;
}

export interface NarrativeAnalysis {
  readonly problem?: NarrativeProblem;
  /** `#x` hyperlink and image targets with no element of that id or name in the div itself. */
  readonly fragments: readonly string[];
}

/** Narratives repeat (generated text): results are memoised, the cap bounds what a client can fill. */
const CACHE_LIMIT = 5_000;
const CACHEABLE_LENGTH = 4_096;
const cache = new Map<string, NarrativeAnalysis>();

/** The last analysis, whatever its length: the format check and the link check ask in a row. */
let last: { xhtml: string; analysis: NarrativeAnalysis } | undefined;

export function analyseNarrative(xhtml: string): NarrativeAnalysis {
  if (last?.xhtml === xhtml) return last.analysis;
  const analysis = cache.get(xhtml) ?? analysedInSlices.get(xhtml) ?? parseNarrative(xhtml);
  if (xhtml.length <= CACHEABLE_LENGTH && cache.size < CACHE_LIMIT) cache.set(xhtml, analysis);
  last = { xhtml, analysis };
  return analysis;
}

/**
 * Long narratives analysed ahead in slices (analyseNarrativeInSlices), kept for the validation of
 * the request that carried them; the oldest go first. Keys over 16 K characters are hashed by
 * their length in V8, so a look-up costs a comparison with the one string of that length.
 */
const SLICED_KEPT = 64;
const analysedInSlices = new Map<string, NarrativeAnalysis>();

/** Characters parsed per turn of the event loop (a few ms on a loaded machine). */
export const NARRATIVE_SLICE_CHARS = 16_384;

/**
 * The same analysis as analyseNarrative, parsed `NARRATIVE_SLICE_CHARS` at a time with a turn of
 * the event loop between slices (`nextTurn`), so a long legal narrative (up to the body limit)
 * never holds the loop for more than one slice; the result is kept, and the synchronous check of
 * the validation that follows finds it instead of parsing again.
 */
export async function analyseNarrativeInSlices(
  xhtml: string,
  nextTurn: () => Promise<void> = () => new Promise((resolve) => setImmediate(resolve)),
): Promise<NarrativeAnalysis> {
  const known = analysedInSlices.get(xhtml);
  if (known) return known;
  const parse = new NarrativeParse();
  for (let at = 0; at < xhtml.length && !parse.tooDeep;) {
    let end = Math.min(xhtml.length, at + NARRATIVE_SLICE_CHARS);
    // never between the two halves of a surrogate pair
    const code = xhtml.charCodeAt(end - 1);
    if (end < xhtml.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
    parse.write(xhtml.slice(at, end));
    at = end;
    if (at < xhtml.length && !parse.tooDeep) await nextTurn();
  }
  const analysis = parse.end();
  analysedInSlices.set(xhtml, analysis);
  if (analysedInSlices.size > SLICED_KEPT) analysedInSlices.delete(analysedInSlices.keys().next().value!);
  return analysis;
}

export function checkNarrative(xhtml: string): NarrativeProblem | undefined {
  return analyseNarrative(xhtml).problem;
}

/**
 * How deep a narrative's elements may nest. Real narratives (tables in lists in sections) stay well
 * under a few dozen levels; the cap fails a hostile document at its first too-deep element.
 */
export const NARRATIVE_MAX_DEPTH = 200;

/** Thrown from inside the parser to stop it at the depth cap (saxes rethrows handler errors). */
class TooDeep extends Error {}

const XML_NS = 'http://www.w3.org/XML/1998/namespace';

/** One open element: its local name and the namespace prefixes it declared (popped on close). */
interface OpenElement {
  readonly local: string;
  readonly declared: readonly string[];
}

/**
 * Namespaces are resolved here, not by saxes: its resolver walks every open element for each tag,
 * which made a document of n nested elements cost n² (32,000 nested `<b>` held the event loop for
 * half a minute). One stack of URIs per prefix answers each look-up in constant time, so the whole
 * check is linear in the length of the div.
 */
class NamespaceScopes {
  private readonly byPrefix = new Map<string, string[]>();

  declare(prefix: string, uri: string): void {
    const stack = this.byPrefix.get(prefix);
    if (stack) stack.push(uri);
    else this.byPrefix.set(prefix, [uri]);
  }

  undeclare(prefixes: readonly string[]): void {
    for (const prefix of prefixes) this.byPrefix.get(prefix)?.pop();
  }

  resolve(prefix: string): string | undefined {
    if (prefix === 'xml') return XML_NS;
    const stack = this.byPrefix.get(prefix);
    const uri = stack?.[stack.length - 1];
    // `xmlns=""` undeclares the default namespace.
    return uri === '' && prefix === '' ? undefined : uri;
  }
}

function splitName(qualified: string): { prefix: string; local: string } {
  const colon = qualified.indexOf(':');
  return colon < 0
    ? { prefix: '', local: qualified }
    : { prefix: qualified.slice(0, colon), local: qualified.slice(colon + 1) };
}

function parseNarrative(xhtml: string): NarrativeAnalysis {
  const parse = new NarrativeParse();
  parse.write(xhtml);
  return parse.end();
}

/** One narrative being parsed, written whole or in slices; `end` gives its analysis. */
class NarrativeParse {
  private readonly problems: NarrativeProblem[] = [];
  private readonly targets = new Set<string>();
  private readonly anchors = new Set<string>();
  private hasContent = false;
  private readonly open: OpenElement[] = [];
  private readonly scopes = new NamespaceScopes();
  private readonly parser = new SaxesParser({ xmlns: false, position: false });
  /** Set at the depth cap: the rest of the document is not read. */
  tooDeep = false;

  constructor() {
    const { parser, open, scopes } = this;
    const fail = (message: string) => this.fail(message);
    // Only XML's five named entities and numeric references: the reference refuses HTML's (`&nbsp;`,
    // `&reg;` …) in a narrative, as an XML parser without HTML's DTD does.
    parser.on('error', (error) => fail(`The narrative is not well-formed XHTML: ${error.message}`));
    parser.on('doctype', () => fail('A DOCTYPE is not allowed in a narrative'));
    parser.on('processinginstruction', () => fail('Processing instructions are not allowed in a narrative'));
    parser.on('opentag', (tag: SaxesTagPlain) => {
      if (open.length >= NARRATIVE_MAX_DEPTH) throw new TooDeep();
      const declared: string[] = [];
      for (const [name, value] of Object.entries(tag.attributes)) {
        if (name === 'xmlns') declared.push('');
        else if (name.startsWith('xmlns:')) declared.push(name.slice(6));
        else continue;
        scopes.declare(declared[declared.length - 1], value);
      }
      const { prefix, local: name } = splitName(tag.name);
      const uri = scopes.resolve(prefix);
      if (prefix !== '' && uri === undefined) fail(`Element '${tag.name}' uses an unbound namespace prefix`);
      if (open.length === 0) {
        if (name !== 'div') fail(`The narrative's root element must be 'div', found '${tag.name}'`);
        else if (uri !== XHTML_NS) fail(`The narrative's div must be in the XHTML namespace ${XHTML_NS}`);
      } else if (uri !== XHTML_NS) {
        fail(`Element '${tag.name}' is not in the XHTML namespace`);
      }
      if (!ELEMENTS.has(name)) fail(`Element '${tag.name}' is not allowed in a narrative`);
      if (open[open.length - 1]?.local === 'p' && NOT_IN_PARAGRAPH.has(name))
        fail(`Element '${name}' is not allowed inside 'p'`);
      open.push({ local: name, declared });
      if (name === 'img') this.hasContent = true;
      for (const [attributeName, value] of Object.entries(tag.attributes)) {
        checkAttribute(name, attributeName, value, scopes, fail);
        if ((attributeName === 'href' || attributeName === 'src') && value.startsWith('#'))
          this.targets.add(value.slice(1));
        if (attributeName === 'id' || attributeName === 'name') this.anchors.add(value);
      }
    });
    parser.on('closetag', () => {
      const closed = open.pop();
      if (closed) scopes.undeclare(closed.declared);
    });
    parser.on('text', (text) => {
      if (/\S/.test(text)) this.hasContent = true;
    });
  }

  private fail(message: string): void {
    if (this.problems.length === 0) this.problems.push({ rule: 'txt-1', message });
  }

  /** Reads the next part of the document (the parser carries what a slice leaves open). */
  write(slice: string): void {
    if (this.tooDeep) return;
    try {
      this.parser.write(slice);
    } catch (error) {
      this.caught(error);
    }
  }

  end(): NarrativeAnalysis {
    if (!this.tooDeep) {
      try {
        this.parser.close();
      } catch (error) {
        this.caught(error);
      }
    }
    if (this.tooDeep) {
      const problem: NarrativeProblem = {
        rule: 'txt-1',
        message: `The narrative nests elements more than ${NARRATIVE_MAX_DEPTH} levels deep (the limit)`,
      };
      return { problem, fragments: [] };
    }
    const fragments = [...this.targets].filter((target) => !this.anchors.has(target));
    if (this.problems.length > 0) return { problem: this.problems[0], fragments };
    if (!this.hasContent)
      return {
        problem: { rule: 'txt-2', message: 'The narrative SHALL have some non-whitespace content' },
        fragments,
      };
    return { fragments };
  }

  private caught(error: unknown): void {
    if (error instanceof TooDeep) this.tooDeep = true;
    else this.fail(`The narrative is not well-formed XHTML: ${(error as Error).message}`);
  }
}

function checkAttribute(
  element: string,
  name: string,
  value: string,
  scopes: NamespaceScopes,
  fail: (message: string) => void,
): void {
  const { prefix } = splitName(name);
  const isDeclaration = name === 'xmlns' || prefix === 'xmlns';
  if (!isDeclaration && prefix !== '' && scopes.resolve(prefix) === undefined)
    fail(`Attribute '${name}' uses an unbound namespace prefix`);
  const qualified = isDeclaration ? 'xmlns' : name;
  if (!ANY_ELEMENT_ATTRIBUTES.has(qualified) && !ELEMENT_ATTRIBUTES.has(`${element}.${qualified}`)) {
    fail(`Attribute '${name}' is not allowed on '${element}' in a narrative`);
  } else if (URL_ATTRIBUTES.has(qualified) && /^\s*(?:javascript|vbscript|data:text\/html)/i.test(value)) {
    fail(`Attribute '${name}' must not hold a script URL`);
  }
}
