import { analyseNarrative, NARRATIVE_MAX_DEPTH } from './narrative';

const XHTML = 'http://www.w3.org/1999/xhtml';
const nested = (levels: number) =>
  `<div xmlns="${XHTML}">${'<b>'.repeat(levels - 1)}x${'</b>'.repeat(levels - 1)}</div>`;

describe('narrative XHTML check', () => {
  it(`accepts ${NARRATIVE_MAX_DEPTH} levels of elements and refuses one more, naming the limit`, () => {
    expect(analyseNarrative(nested(NARRATIVE_MAX_DEPTH)).problem).toBeUndefined();
    expect(analyseNarrative(nested(NARRATIVE_MAX_DEPTH + 1)).problem).toEqual({
      rule: 'txt-1',
      message: `The narrative nests elements more than ${NARRATIVE_MAX_DEPTH} levels deep (the limit)`,
    });
  });

  it('stops at the limit however deep the document goes, closed or not', () => {
    for (const div of [nested(32_000), `<div xmlns="${XHTML}">${'<b>'.repeat(32_000)}`]) {
      expect(analyseNarrative(div).problem?.message).toContain('levels deep');
    }
  });

  it.each([
    ['a prefixed XHTML root', `<h:div xmlns:h="${XHTML}"><h:p>x</h:p></h:div>`, undefined],
    [
      'a default namespace redeclared to XHTML',
      `<div xmlns="${XHTML}"><p xmlns="${XHTML}">x</p></div>`,
      undefined,
    ],
    ['xml:lang', `<div xmlns="${XHTML}"><p xml:lang="en">x</p></div>`, undefined],
    ['an unbound element prefix', `<div xmlns="${XHTML}"><q:p>x</q:p></div>`, /unbound namespace prefix/],
    [
      'an unbound attribute prefix',
      `<div xmlns="${XHTML}"><p q:x="1">x</p></div>`,
      /unbound namespace prefix/,
    ],
    [
      'a child out of the namespace',
      `<div xmlns="${XHTML}"><p xmlns="">x</p></div>`,
      /not in the XHTML namespace/,
    ],
    ['a root out of the namespace', '<div>x</div>', /XHTML namespace/],
    [
      'a prefix declared by a sibling only',
      `<div xmlns="${XHTML}"><p xmlns:h="${XHTML}">x</p><h:p>y</h:p></div>`,
      /unbound namespace prefix/,
    ],
  ])('namespaces: %s', (_name, div, problem) => {
    const found = analyseNarrative(div).problem;
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found?.message).toMatch(problem);
  });
});
