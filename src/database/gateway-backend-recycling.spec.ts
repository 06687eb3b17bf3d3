import { backendRecyclingSql, DEFAULT_BACKEND_RECYCLING } from './gateway-backend-recycling';

describe('backendRecyclingSql', () => {
  it('refuses a schedule pg_cron cannot run (seconds schedules are 1–59) and bounds that are not whole seconds', () => {
    expect(() => backendRecyclingSql('fhir', { ...DEFAULT_BACKEND_RECYCLING, everySeconds: 60 })).toThrow(
      /everySeconds/,
    );
    expect(() => backendRecyclingSql('fhir', { ...DEFAULT_BACKEND_RECYCLING, everySeconds: 0 })).toThrow();
    expect(() => backendRecyclingSql('fhir', { ...DEFAULT_BACKEND_RECYCLING, maxAgeSeconds: 1.5 })).toThrow(
      /maxAgeSeconds/,
    );
    expect(() => backendRecyclingSql('fhir', { ...DEFAULT_BACKEND_RECYCLING, idleSeconds: -1 })).toThrow(
      /idleSeconds/,
    );
  });

  it('refuses a role name that would need quoting', () => {
    expect(() => backendRecyclingSql("x'; DROP ROLE y; --", DEFAULT_BACKEND_RECYCLING)).toThrow(/role/);
  });
});
