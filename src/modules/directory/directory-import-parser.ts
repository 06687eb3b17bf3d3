/**
 * Reading directory import files: NDJSON, a JSON array, or CSV. Each parser
 * yields one item per record with the line it starts on, and a broken record becomes an error
 * item: it never stops the rest of the file from loading. Pure logic (no database).
 */

export type ImportFormat = 'ndjson' | 'json' | 'csv';

export type ParsedRecord = { line: number; record: unknown } | { line: number; error: string };

export function formatFromFileName(fileName: string): ImportFormat | null {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson';
  if (lower.endsWith('.json')) return 'json';
  if (lower.endsWith('.csv')) return 'csv';
  return null;
}

function parseJsonText(text: string, line: number): ParsedRecord {
  try {
    return { line, record: JSON.parse(text) };
  } catch (e) {
    return { line, error: `malformed JSON: ${(e as Error).message}` };
  }
}

/** One JSON value per non-blank line. */
export function* parseNdjson(text: string): Generator<ParsedRecord> {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].replace(/\r$/, '');
    if (raw.trim() !== '') yield parseJsonText(raw, i + 1);
  }
}

/**
 * A JSON array, split into its top-level elements by a scanner that tracks strings and nesting,
 * so that one malformed element is reported with its line and the others still load.
 */
export function* parseJsonArray(text: string): Generator<ParsedRecord> {
  let i = text.search(/\S/);
  if (i < 0 || text[i] !== '[') {
    yield { line: 1, error: 'a .json import file must hold a JSON array of records' };
    return;
  }
  let line = 1 + countNewlines(text, 0, i);
  i++;
  let depth = 0;
  let inString = false;
  let start = -1;
  let startLine = line;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\n') line++;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (start < 0 && /\S/.test(ch) && ch !== ',' && !(depth === 0 && ch === ']')) {
      start = i;
      startLine = line;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if ((ch === '}' || ch === ']') && depth > 0) depth--;
    else if (depth === 0 && (ch === ',' || ch === ']')) {
      if (start >= 0) yield parseJsonText(text.slice(start, i), startLine);
      start = -1;
      if (ch === ']') return;
    }
  }
  if (start >= 0) yield parseJsonText(text.slice(start), startLine);
  yield { line, error: 'the JSON array is not closed' };
}

function countNewlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (text[i] === '\n') n++;
  return n;
}

/** RFC 4180 rows (quoted fields may hold commas, quotes and newlines), each with its first line. */
export function* csvRows(text: string): Generator<{ line: number; cells: string[]; error?: string }> {
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const rowLine = line;
    const cells: string[] = [];
    let cell = '';
    let error: string | undefined;
    let quoted = false;
    let endOfRow = false;
    while (i < text.length && !endOfRow) {
      const ch = text[i];
      if (quoted) {
        if (ch === '"' && text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        if (ch === '"') quoted = false;
        else {
          if (ch === '\n') line++;
          cell += ch;
        }
        i++;
        continue;
      }
      if (ch === '"' && cell === '') quoted = true;
      else if (ch === '"') error ??= `stray quote in column ${cells.length + 1}`;
      else if (ch === ',') {
        cells.push(cell);
        cell = '';
      } else if (ch === '\n') {
        line++;
        endOfRow = true;
      } else if (ch !== '\r') cell += ch;
      i++;
    }
    if (quoted) error = 'unterminated quoted field';
    cells.push(cell);
    if (cells.length === 1 && cells[0].trim() === '' && !error) continue;
    yield { line: rowLine, cells, error };
  }
}

/** CSV header names → record paths. Several `address.line` columns, or one with lines split by `|`. */
const CSV_COLUMNS: Record<string, string> = {
  id: 'id',
  name: 'name',
  system_type: 'system_type',
  'address.line': 'address.line',
  address_line: 'address.line',
  'address.city': 'address.city',
  city: 'address.city',
  'address.state': 'address.state',
  state: 'address.state',
  'address.postalcode': 'address.postalCode',
  postalcode: 'address.postalCode',
  postal_code: 'address.postalCode',
  ehr: 'ehr',
  fhir_base_url: 'fhir_base_url',
  logo: 'logo',
  status: 'status',
};

export function* parseCsv(text: string): Generator<ParsedRecord> {
  const rows = csvRows(text.replace(/^\uFEFF/, ''));
  const header = rows.next();
  if (header.done) return;
  const columns = header.value.cells.map((c) => CSV_COLUMNS[c.trim().toLowerCase()] ?? null);
  const unknown = header.value.cells.filter((_c, i) => columns[i] === null);
  if (unknown.length > 0 || !columns.includes('id')) {
    yield {
      line: header.value.line,
      error: `bad CSV header: ${unknown.length > 0 ? `unknown column(s) ${unknown.join(', ')}` : 'no id column'}`,
    };
    return;
  }
  for (const row of rows) {
    if (row.error) {
      yield { line: row.line, error: row.error };
      continue;
    }
    if (row.cells.length !== columns.length) {
      yield { line: row.line, error: `expected ${columns.length} columns, found ${row.cells.length}` };
      continue;
    }
    const address: Record<string, unknown> = { line: [] as string[] };
    const record: Record<string, unknown> = { address };
    row.cells.forEach((value, i) => {
      const path = columns[i];
      if (path === 'address.line') {
        (address.line as string[]).push(
          ...value
            .split('|')
            .map((l) => l.trim())
            .filter(Boolean),
        );
      } else if (path.startsWith('address.')) address[path.slice('address.'.length)] = value;
      else record[path] = value;
    });
    yield { line: row.line, record };
  }
}

export function parseImport(text: string, format: ImportFormat): Generator<ParsedRecord> {
  switch (format) {
    case 'ndjson':
      return parseNdjson(text);
    case 'json':
      return parseJsonArray(text);
    case 'csv':
      return parseCsv(text);
  }
}
