import { isReadOnly, TenantContext } from './tenant-context';

const ctx = (over: Partial<TenantContext>): TenantContext => ({
  clientId: 'c1',
  userId: 7,
  scopes: ['user/*.*'],
  form: 'user-token',
  ...over,
});

describe('isReadOnly', () => {
  it('user/*.* may write', () => expect(isReadOnly(ctx({}))).toBe(false));
  it('user/*.rs may not', () => expect(isReadOnly(ctx({ scopes: ['user/*.rs'] }))).toBe(true));
  it('user/*.read may not', () => expect(isReadOnly(ctx({ scopes: ['user/*.read'] }))).toBe(true));
  it('user/*.cruds may', () => expect(isReadOnly(ctx({ scopes: ['user/*.cruds'] }))).toBe(false));
  it('bulk-data only may not', () => expect(isReadOnly(ctx({ scopes: ['bulk-data'] }))).toBe(true));
});
