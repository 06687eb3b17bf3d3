/**
 * Failures a source may spend at its own pace in a window: a few mistyped or rotated secrets verify
 * as they come, one after another or together.
 */
export const UNPACED_FAILURES = 5;
/** Past UNPACED_FAILURES, the time between a failed verification and the address's next one. */
export const FAILURE_PACE_MS = 1000;
/** Addresses remembered; past that, idle ones whose failures are forgotten go first, then the oldest idle. */
const MAX_ADDRESSES = 10_000;

interface AddressState {
  /** Failed verifications of the address in this process, forgotten a window after the last. */
  failures: number;
  /** When the address's last verification failed (ms since the epoch). */
  lastFailureAt: number;
  /** Verifications of the address running now. */
  running: number;
  /** Settled when the next running verification ends (made when an attempt waits for it). */
  ended?: Promise<void>;
  end?: () => void;
}

/** Why an attempt may not verify now: the seconds until it may. */
export class PacingRefusal {
  constructor(readonly retryAfterSeconds: number) {}
}

/**
 * Paces the verification of client secrets per source (docs/security.md "Throttling failed client
 * authentication"); a source is a key the caller chooses: the (client id, address) pair of one
 * failure window, so a new window starts afresh. The failure slots bound how many wrong secrets a
 * source may have checked per window (TOKEN_FAILURE_LIMIT); this bounds how fast: a burst of wrong
 * secrets verified back to back is a second of scrypt on a core, taken from every other tenant at
 * once. Past UNPACED_FAILURES, a source runs one verification at a time and waits FAILURE_PACE_MS
 * after each failure; an attempt arriving meanwhile is refused (429 with Retry-After) without a
 * verification, and one waiting for a running verification is refused when that one fails. Before
 * that, at most UNPACED_FAILURES run at once (counting failures), so the first burst costs that
 * many, not the window's limit. Right secrets are never slowed: a secret verified as right is
 * remembered and passes before this (ClientAuthenticator), and waiters behind a right one run.
 * Per process (like the in-memory failure slots); nothing here grants what the slots refuse.
 */
export class FailurePacing {
  private readonly addresses = new Map<string, AddressState>();

  /** `forgetAfterMs`: an address's failures are forgotten this long after its last (the window). */
  constructor(
    private readonly forgetAfterMs: number,
    private readonly now: () => number = Date.now,
    private readonly unpacedFailures = UNPACED_FAILURES,
    private readonly paceMs = FAILURE_PACE_MS,
  ) {}

  /** The refusal an attempt from this address gets now without waiting, or undefined; nothing taken. */
  refusalNow(address: string): PacingRefusal | undefined {
    const state = this.current(address);
    if (!state || state.failures < this.unpacedFailures) return undefined;
    const wait = state.lastFailureAt + this.paceMs - this.now();
    return wait > 0 ? new PacingRefusal(Math.max(1, Math.ceil(wait / 1000))) : undefined;
  }

  /**
   * Runs `verify` when the address's pace allows; `failed` says whether its answer was a failure.
   * Returns the answer, or a PacingRefusal without running it.
   */
  async paced<T>(
    address: string,
    verify: () => Promise<T>,
    failed: (answer: T) => boolean,
  ): Promise<T | PacingRefusal> {
    for (;;) {
      const refusal = this.refusalNow(address);
      if (refusal) return refusal;
      const state = this.stateOf(address);
      if (state.running === 0 || state.failures + state.running < this.unpacedFailures) break;
      // wait for a running verification of the address to end, then judge again
      state.ended ??= new Promise<void>((resolve) => (state.end = resolve));
      const failuresBefore = state.failures;
      await state.ended;
      if (state.failures > failuresBefore && state.failures >= this.unpacedFailures)
        return new PacingRefusal(Math.max(1, Math.ceil(this.paceMs / 1000)));
    }
    const state = this.stateOf(address);
    state.running += 1;
    let answerFailed = false;
    try {
      const answer = await verify();
      answerFailed = failed(answer);
      return answer;
    } finally {
      state.running -= 1;
      if (answerFailed) {
        state.failures += 1;
        state.lastFailureAt = this.now();
      }
      const end = state.end;
      state.ended = state.end = undefined;
      end?.();
      if (state.running === 0 && state.failures === 0) this.addresses.delete(address);
    }
  }

  /** The address's state, its failures forgotten once the last is older than the window. */
  private current(address: string): AddressState | undefined {
    const state = this.addresses.get(address);
    if (state && state.running === 0 && !state.end && this.forgotten(state)) {
      this.addresses.delete(address);
      return undefined;
    }
    return state;
  }

  private forgotten(state: AddressState): boolean {
    return state.lastFailureAt + this.forgetAfterMs <= this.now();
  }

  private stateOf(address: string): AddressState {
    let state = this.current(address);
    if (!state) {
      state = { failures: 0, lastFailureAt: 0, running: 0 };
      this.addresses.set(address, state);
      if (this.addresses.size > MAX_ADDRESSES) this.prune();
    }
    return state;
  }

  private prune(): void {
    for (const [address, state] of this.addresses)
      if (state.running === 0 && !state.end && this.forgotten(state)) this.addresses.delete(address);
    // still full: the oldest idle addresses go first (Map keeps insertion order)
    for (const [address, state] of this.addresses) {
      if (this.addresses.size <= MAX_ADDRESSES) break;
      if (state.running === 0 && !state.end) this.addresses.delete(address);
    }
  }
}
