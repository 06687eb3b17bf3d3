import { CLIENT_TOKEN_SCOPES, parseScope, USER_TOKEN_SCOPES, withDefaultResourceScope } from './scopes';

describe('scopes', () => {
  it('splits on spaces and on the realm examples` pipe', () => {
    expect(parseScope('bulk-data|user/*.rs', CLIENT_TOKEN_SCOPES)).toEqual({
      scopes: ['bulk-data', 'user/*.rs'],
      unknown: [],
    });
    expect(parseScope(' openid  user/*.* ', USER_TOKEN_SCOPES).scopes).toEqual(['openid', 'user/*.*']);
  });

  it('reports unknown scopes', () => {
    expect(parseScope('openid admin', USER_TOKEN_SCOPES).unknown).toEqual(['admin']);
  });

  it('adds the default resource scope only when none is present', () => {
    expect(withDefaultResourceScope(['openid'], ['user/*.*'])).toEqual(['openid', 'user/*.*']);
    expect(withDefaultResourceScope(['user/*.rs'], ['user/*.*'])).toEqual(['user/*.rs']);
    expect(withDefaultResourceScope([], ['user/*.*'])).toEqual(['user/*.*']);
  });
});
