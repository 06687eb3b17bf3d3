import {
  commandRuns,
  deadProcesses,
  InstanceRecord,
  lockAddress,
  parseInstanceRecord,
} from './instance-record';

const record: InstanceRecord = {
  ownerPid: 4242,
  ownerRole: 'server',
  state: 'running',
  startedAt: '2026-01-02T03:04:05.000Z',
  folder: '/srv/fhir/data/documentdb',
  port: 40123,
  postgresPid: 100,
  gatewayPid: 101,
  version: 'DocumentDB 0.104-0 on PostgreSQL 15.13',
};

describe('parseInstanceRecord', () => {
  it('accepts a record as written', () => {
    expect(parseInstanceRecord(JSON.stringify(record))).toEqual(record);
  });

  it.each([
    ['a torn write', '{"ownerPid": 42', 'not JSON'],
    ['another file', '[1,2]', 'not an object'],
    [
      'a pid that is no pid',
      JSON.stringify({ ...record, ownerPid: -1, gatewayPid: 1.5 }),
      'bad ownerPid, gatewayPid',
    ],
    [
      'an unknown role and state',
      JSON.stringify({ ...record, ownerRole: 'x', state: 'odd' }),
      'bad ownerRole, state',
    ],
    ['a relative folder', JSON.stringify({ ...record, folder: 'data/documentdb' }), 'bad folder'],
    ['a port out of range', JSON.stringify({ ...record, port: 70000 }), 'bad port'],
    ['a date that is none', JSON.stringify({ ...record, startedAt: 'yesterday' }), 'bad startedAt'],
  ])('refuses %s', (_, text, why) => {
    expect(parseInstanceRecord(text)).toBe(why);
  });
});

describe('commandRuns (is a pid still our database process?)', () => {
  const folder = '/srv/fhir/data/documentdb';
  const cmd = (...args: string[]) => args.join('\0') + '\0';

  it('recognises postgres and the gateway on this folder', () => {
    expect(
      commandRuns(
        cmd('/usr/lib/postgresql/15/bin/postgres', '-D', `${folder}/pg`, '-c', 'port=9712'),
        'postgres',
        folder,
      ),
    ).toBe(true);
    expect(
      commandRuns(
        cmd('/opt/documentdb/bin/documentdb_gateway', `${folder}/gateway/SetupConfiguration.json`),
        'documentdb_gateway',
        folder,
      ),
    ).toBe(true);
    expect(commandRuns(cmd('postgres', '-c', `log_directory=${folder}/logs`), 'postgres', folder)).toBe(true);
  });

  it('refuses a reused pid: another program, or the same program on another data folder', () => {
    expect(commandRuns(cmd('/usr/bin/vim', `${folder}/pg/postgresql.conf`), 'postgres', folder)).toBe(false);
    expect(
      commandRuns(
        cmd('/usr/lib/postgresql/15/bin/postgres', '-D', '/other/documentdb/pg'),
        'postgres',
        folder,
      ),
    ).toBe(false);
    // a folder whose name only starts like ours
    expect(commandRuns(cmd('postgres', '-D', `${folder}-copy/pg`), 'postgres', folder)).toBe(false);
    // a backend renames itself ("postgres: fhir postgres [local] idle"): not the postmaster
    expect(commandRuns(cmd('postgres: fhir postgres [local] idle'), 'postgres', folder)).toBe(false);
    expect(commandRuns('', 'postgres', folder)).toBe(false);
  });
});

describe('deadProcesses (stale detection)', () => {
  it('is nothing when both run on the folder, and names each one that does not', () => {
    expect(deadProcesses(record, () => true)).toBeUndefined();
    expect(deadProcesses(record, (pid) => pid !== 101)).toBe(
      'gateway (pid 101) not running on /srv/fhir/data/documentdb',
    );
    expect(deadProcesses(record, () => false)).toBe(
      'postgres (pid 100) and gateway (pid 101) not running on /srv/fhir/data/documentdb',
    );
  });

  it('checks each pid for its own program on the record folder', () => {
    const asked: string[] = [];
    deadProcesses(record, (pid, program, folder) => (asked.push(`${pid} ${program} ${folder}`), true));
    expect(asked).toEqual([
      '100 postgres /srv/fhir/data/documentdb',
      '101 documentdb_gateway /srv/fhir/data/documentdb',
    ]);
  });
});

describe('lockAddress', () => {
  it('is an abstract socket name, one per folder', () => {
    expect(lockAddress('/a')[0]).toBe('\0');
    expect(lockAddress('/a')).toBe(lockAddress('/a'));
    expect(lockAddress('/a')).not.toBe(lockAddress('/b'));
    expect(lockAddress('/'.repeat(500)).length).toBeLessThan(100);
  });
});
