import { hashSecret, verifySecret } from './secret-hash';

/** scrypt as the module calls it, counting how many run at once (the module's own code is untouched). */
const scryptRuns = { running: 0, mostAtOnce: 0 };
jest.mock('crypto', () => {
  const actual = jest.requireActual<typeof import('crypto')>('crypto');
  return {
    ...actual,
    scrypt: (...args: unknown[]) => {
      const done = args.pop() as (err: Error | null, key: Buffer) => void;
      scryptRuns.mostAtOnce = Math.max(scryptRuns.mostAtOnce, ++scryptRuns.running);
      (actual.scrypt as (...a: unknown[]) => void)(...args, (err: Error | null, key: Buffer) => {
        scryptRuns.running -= 1;
        done(err, key);
      });
    },
  };
});

describe('secret hashing', () => {
  it('verifies the right secret and rejects others', async () => {
    const hash = await hashSecret('s3cret');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(hash).not.toContain('s3cret');
    await expect(verifySecret('s3cret', hash)).resolves.toBe(true);
    await expect(verifySecret('s3cret ', hash)).resolves.toBe(false);
    await expect(verifySecret('', hash)).resolves.toBe(false);
  });

  it('salts: the same secret hashes differently', async () => {
    expect(await hashSecret('x')).not.toEqual(await hashSecret('x'));
  });

  it('an unknown client (no stored hash) never verifies', async () => {
    await expect(verifySecret('anything', undefined)).resolves.toBe(false);
  });

  it('a malformed stored hash never verifies', async () => {
    await expect(verifySecret('x', 'plain')).resolves.toBe(false);
  });

  it('verifications run one at a time, each with its own answer (a flood takes at most one core)', async () => {
    const hash = await hashSecret('right');
    scryptRuns.mostAtOnce = 0;
    const answers = await Promise.all(
      ['w1', 'right', 'w2', 'w3', 'right', ''].map((s) => verifySecret(s, hash)),
    );
    expect(answers).toEqual([false, true, false, false, true, false]);
    expect(scryptRuns.mostAtOnce).toBe(1);
  });
});
