import {
  csvRows,
  formatFromFileName,
  parseCsv,
  parseJsonArray,
  parseNdjson,
} from './directory-import-parser';

describe('directory import parsing', () => {
  it('tells the format from the file name', () => {
    expect(formatFromFileName('a.NDJSON')).toBe('ndjson');
    expect(formatFromFileName('a.jsonl')).toBe('ndjson');
    expect(formatFromFileName('a.json')).toBe('json');
    expect(formatFromFileName('a.csv')).toBe('csv');
    expect(formatFromFileName('a.txt')).toBeNull();
  });

  it('NDJSON: one record per non-blank line, broken lines reported with their number', () => {
    const items = [...parseNdjson('{"id":"a"}\r\n\n{broken\n{"id":"b"}\n')];
    expect(items).toEqual([
      { line: 1, record: { id: 'a' } },
      { line: 3, error: expect.stringMatching(/malformed JSON/) },
      { line: 4, record: { id: 'b' } },
    ]);
  });

  it('JSON array: elements with their first line; a broken element does not stop the others', () => {
    const text = '[\n  {"id": "a", "n": [1, {"x": "]"}]},\n  {"id": "b",, },\n  {"id": "c\\"}"}\n]';
    expect([...parseJsonArray(text)]).toEqual([
      { line: 2, record: { id: 'a', n: [1, { x: ']' }] } },
      { line: 3, error: expect.stringMatching(/malformed JSON/) },
      { line: 4, record: { id: 'c"}' } },
    ]);
    expect([...parseJsonArray('[]')]).toEqual([]);
    expect([...parseJsonArray('{"id":"a"}')]).toEqual([
      { line: 1, error: expect.stringMatching(/JSON array/) },
    ]);
    expect([...parseJsonArray('[{"id":"a"}')].pop()).toEqual({
      line: 1,
      error: 'the JSON array is not closed',
    });
  });

  it('CSV rows: quotes, embedded commas, quotes and newlines; the line a row starts on', () => {
    const rows = [...csvRows('a,b\r\n"x, y","say ""hi"""\n"multi\nline",z\n')];
    expect(rows).toEqual([
      { line: 1, cells: ['a', 'b'], error: undefined },
      { line: 2, cells: ['x, y', 'say "hi"'], error: undefined },
      { line: 3, cells: ['multi\nline', 'z'], error: undefined },
    ]);
  });

  it('CSV records: columns are the fields, address lines split by |, bad rows reported', () => {
    const text =
      'id,name,system_type,address.line,address.city,state,postalCode,ehr,fhir_base_url,logo,status\n' +
      'h1,"General, Inc",HealthSystem,1 Main St | Suite 2,Boston,MA,02115,Epic,https://f.example/r4,,active\n' +
      'h2,too,few\n' +
      'h3,"open quote,HealthSystem,,,,,,,,\n';
    const items = [...parseCsv(text)];
    expect(items[0]).toEqual({
      line: 2,
      record: {
        id: 'h1',
        name: 'General, Inc',
        system_type: 'HealthSystem',
        address: { line: ['1 Main St', 'Suite 2'], city: 'Boston', state: 'MA', postalCode: '02115' },
        ehr: 'Epic',
        fhir_base_url: 'https://f.example/r4',
        logo: '',
        status: 'active',
      },
    });
    expect(items[1]).toEqual({ line: 3, error: 'expected 11 columns, found 3' });
    expect(items[2]).toEqual({ line: 4, error: 'unterminated quoted field' });
  });

  it('CSV: an unknown header column is one error, nothing else is read', () => {
    expect([...parseCsv('id,nmae\nx,y\n')]).toEqual([
      { line: 1, error: 'bad CSV header: unknown column(s) nmae' },
    ]);
  });
});
