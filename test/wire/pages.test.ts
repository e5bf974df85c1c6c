/** The service's verification page: the one path every printed link, hint and sandbox route uses. */
import { describe, expect, it } from 'vitest';
import { VERIFICATION_PAGE, verificationPath, verificationUrl } from '../../src/api/pages.js';
import { matchRoute } from '../../src/sandbox/routes.js';

const HASH = '905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001';

describe('verification page', () => {
  it('is /verification/{hash} on the service, as service-api.md documents', () => {
    expect(VERIFICATION_PAGE).toBe('/verification/');
    expect(verificationPath(HASH)).toBe(`/verification/${HASH}`);
    expect(verificationUrl('https://app.dedit.io', HASH)).toBe(`https://app.dedit.io/verification/${HASH}`);
  });

  it('is the page the sandbox serves, and only that path (nothing under it, nothing beside it)', () => {
    expect(matchRoute(verificationPath(HASH))).toEqual({ route: 'verification', method: 'GET', param: HASH });
    expect(matchRoute(`${verificationPath(HASH)}/more`)).toBeUndefined();
    expect(matchRoute(`/x${verificationPath(HASH)}`)).toBeUndefined();
    expect(matchRoute(VERIFICATION_PAGE)).toBeUndefined();
  });
});
