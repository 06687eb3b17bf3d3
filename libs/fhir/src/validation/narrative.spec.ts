import {
  analyseNarrative,
  analyseNarrativeInSlices,
  NARRATIVE_MAX_DEPTH,
  NARRATIVE_SLICE_CHARS,
} from './narrative';

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

describe('narrative XHTML check in slices', () => {
  const long = (inner: string) => `<div xmlns="${XHTML}">${inner}</div>`;
  // each case crosses several slice boundaries, inside tags, attributes, entities and pairs of surrogates
  const cases: Array<[string, string]> = [
    ['legal paragraphs', long('<p class="c">x&amp;y&#160;😀</p>'.repeat(3_000))],
    [
      'a script URL late in the document',
      long(`${'<p>x</p>'.repeat(5_000)}<a href="javascript:alert(1)">x</a>`),
    ],
    ['an element not allowed', long(`${'<p>😀😀</p>'.repeat(4_000)}<script>x</script>`)],
    ['not well-formed at the end', long('<p>x</p>'.repeat(5_000)).replace('</p></div>', '</div>')],
    ['too deep after a long flat part', long(`${'<p>x</p>'.repeat(5_000)}${'<b>'.repeat(300)}`)],
    ['no content', long('<p> </p>'.repeat(5_000))],
  ];

  it.each(cases)(
    '%s: the same analysis as in one piece, with turns of the loop between slices',
    async (_, div) => {
      expect(div.length).toBeGreaterThan(2 * NARRATIVE_SLICE_CHARS);
      const whole = analyseNarrative(div); // in one piece: nothing kept from slices yet
      let turns = 0;
      const sliced = await analyseNarrativeInSlices(div, async () => {
        turns += 1;
      });
      expect(turns).toBeGreaterThanOrEqual(2);
      expect(sliced).toEqual(whole);
      // the synchronous check of the validation then finds the sliced result, without parsing again
      analyseNarrative(long('other'));
      expect(analyseNarrative(div)).toBe(sliced);
    },
  );

  it('stops reading at the depth limit: no further slice is parsed', async () => {
    const div = long(`${'<b>'.repeat(NARRATIVE_MAX_DEPTH + 1)}${'<p>x</p>'.repeat(20_000)}`);
    let turns = 0;
    const analysis = await analyseNarrativeInSlices(div, async () => {
      turns += 1;
    });
    expect(analysis.problem?.message).toContain('levels deep');
    expect(turns).toBe(0);
  });
});
