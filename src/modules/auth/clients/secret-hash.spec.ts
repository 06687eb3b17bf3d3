import {
  hashChosenSecret,
  hashGeneratedSecret,
  isSlowHash,
  newSecret,
  sha256,
  verifySecret,
} from './secret-hash';

/**
 * scrypt and timingSafeEqual as the modules call them, recorded (the modules' own code is
 * untouched): how many scrypt runs, how many at once, and the lengths each comparison saw.
 */
const scryptRuns = { started: 0, running: 0, mostAtOnce: 0 };
const comparisons: Array<[number, number]> = [];
jest.mock('crypto', () => {
  const actual = jest.requireActual<typeof import('crypto')>('crypto');
  return {
    ...actual,
    scrypt: (...args: unknown[]) => {
      const done = args.pop() as (err: Error | null, key: Buffer) => void;
      scryptRuns.started += 1;
      scryptRuns.mostAtOnce = Math.max(scryptRuns.mostAtOnce, ++scryptRuns.running);
      try {
        (actual.scrypt as (...a: unknown[]) => void)(...args, (err: Error | null, key: Buffer) => {
          scryptRuns.running -= 1;
          done(err, key);
        });
      } catch (error) {
        scryptRuns.running -= 1; // parameters refused before running
        throw error;
      }
    },
    timingSafeEqual: (a: Buffer, b: Buffer) => {
      comparisons.push([a.length, b.length]);
      return actual.timingSafeEqual(a, b);
    },
  };
});

/** What `work` cost: scrypt runs started and the comparisons made. */
async function costOf<T>(
  work: () => Promise<T>,
): Promise<{ answer: T; scrypt: number; compared: number[][] }> {
  const started = scryptRuns.started;
  comparisons.length = 0;
  const answer = await work();
  return { answer, scrypt: scryptRuns.started - started, compared: [...comparisons] };
}

describe('server-made secrets: a SHA-256 digest', () => {
  const secret = newSecret();
  const stored = hashGeneratedSecret(secret);

  it('is `sha256$` and the base64url digest, deterministic, never the secret', () => {
    expect(stored).toBe(`sha256$${sha256(secret)}`);
    expect(stored).toMatch(/^sha256\$[\w-]{43}$/);
    expect(hashGeneratedSecret(secret)).toBe(stored);
    expect(stored).not.toContain(secret);
    expect(isSlowHash(stored)).toBe(false);
  });

  it('verifies the right secret and rejects others, without scrypt', async () => {
    for (const [presented, right] of [
      [secret, true],
      [`${secret} `, false],
      [secret.slice(1), false],
      ['', false],
    ] as const) {
      const cost = await costOf(() => verifySecret(presented, stored));
      expect({ presented, answer: cost.answer, scrypt: cost.scrypt }).toEqual({
        presented,
        answer: right,
        scrypt: 0,
      });
    }
  });

  it('compares in constant time: one timingSafeEqual of two 32-byte digests, right or wrong', async () => {
    expect((await costOf(() => verifySecret(secret, stored))).compared).toEqual([[32, 32]]);
    expect((await costOf(() => verifySecret('wrong', stored))).compared).toEqual([[32, 32]]);
  });

  it('a malformed digest never verifies (and never throws)', async () => {
    for (const bad of [
      'sha256$',
      'sha256$abc',
      `sha256$${sha256(secret)}AAAA`,
      `sha256$${sha256(secret).slice(4)}`,
    ]) {
      await expect(verifySecret(secret, bad)).resolves.toBe(false);
    }
  });

  it('the decoy (nothing stored): false, at the cost of a wrong secret of a stored digest', async () => {
    const decoy = await costOf(() => verifySecret(secret, undefined));
    const wrong = await costOf(() => verifySecret('wrong', stored));
    expect(decoy).toEqual({ answer: false, scrypt: 0, compared: [[32, 32]] });
    expect({ ...wrong, answer: false }).toEqual(decoy);
  });
});

describe('chosen secrets and legacy client secrets: scrypt', () => {
  it('verifies the right secret and rejects others', async () => {
    const hash = await hashChosenSecret('s3cret');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[\w-]+\$[\w-]+$/);
    expect(hash).not.toContain('s3cret');
    expect(isSlowHash(hash)).toBe(true);
    const right = await costOf(() => verifySecret('s3cret', hash));
    expect(right).toEqual({ answer: true, scrypt: 1, compared: [[32, 32]] });
    await expect(verifySecret('s3cret ', hash)).resolves.toBe(false);
    await expect(verifySecret('', hash)).resolves.toBe(false);
  });

  it('salts: the same secret hashes differently', async () => {
    expect(await hashChosenSecret('x')).not.toEqual(await hashChosenSecret('x'));
  });

  it('a malformed hash never verifies, and runs no scrypt when it cannot be parsed', async () => {
    const hash = await hashChosenSecret('x');
    const parts = hash.split('$');
    for (const bad of [
      'plain',
      '',
      'scrypt$1$2',
      hash.replace(/\$[\w-]+$/, '$AAAA'),
      `bcrypt$${parts.slice(1).join('$')}`,
    ]) {
      const cost = await costOf(() => verifySecret('x', bad));
      expect({ bad, ...cost }).toEqual({ bad, answer: false, scrypt: 0, compared: [] });
    }
    // parameters scrypt refuses (N not a power of two): no match, no exception
    await expect(verifySecret('x', ['scrypt', 1000, ...parts.slice(2)].join('$'))).resolves.toBe(false);
  });

  it("the scrypt decoy (an unknown member): false, one scrypt run like a member's wrong secret", async () => {
    await verifySecret('first', undefined, 'scrypt'); // the decoy hash itself is made once, lazily
    const decoy = await costOf(() => verifySecret('anything', undefined, 'scrypt'));
    expect(decoy).toEqual({ answer: false, scrypt: 1, compared: [[32, 32]] });
  });

  it('verifications run one at a time, each with its own answer (a flood takes at most one core)', async () => {
    const hash = await hashChosenSecret('right');
    scryptRuns.mostAtOnce = 0;
    const answers = await Promise.all(
      ['w1', 'right', 'w2', 'w3', 'right', ''].map((s) => verifySecret(s, hash)),
    );
    expect(answers).toEqual([false, true, false, false, true, false]);
    expect(scryptRuns.mostAtOnce).toBe(1);
  });

  it('digests do not wait behind queued scrypt runs', async () => {
    const hash = await hashChosenSecret('right');
    const stored = hashGeneratedSecret('fast');
    const order: string[] = [];
    const slow = Promise.all(
      [1, 2, 3].map(() => verifySecret('wrong', hash).then(() => order.push('scrypt'))),
    );
    await verifySecret('fast', stored).then((ok) => order.push(`digest ${ok}`));
    await slow;
    expect(order[0]).toBe('digest true');
  });
});
