import type { AuthChecker } from 'type-graphql';
import { DomainError } from '../common/errors.js';
import type { GqlContext } from './context.js';

/**
 * Roles used in `@Authorized(...)`: which credential kinds may call a field. `ENROLMENT` marks the
 * fields a dashboard session may use while the merchant's policy still wants it to enrol a second
 * factor (who am I, re-authenticate, log out, set up a factor); every other field refuses it.
 */
export type Role = 'DASHBOARD' | 'API_KEY' | 'CHECKOUT' | 'ENROLMENT';

const KIND_ROLE = { dashboard: 'DASHBOARD', apiKey: 'API_KEY', checkout: 'CHECKOUT' } as const;

/** Throws domain errors (not `false`) so clients get a precise `extensions.code`. */
export const authChecker: AuthChecker<GqlContext, Role> = ({ context }, roles) => {
  if (context.authError) throw context.authError;
  const { caller } = context;
  if (caller.kind === 'anonymous') throw new DomainError('UNAUTHENTICATED', 'Authentication required');
  if (caller.kind === 'dashboard' && caller.enrolmentRequired && !roles.includes('ENROLMENT')) {
    throw new DomainError('SECOND_FACTOR_ENROLMENT_REQUIRED', 'Your merchant requires a second factor: set up an authenticator app or a passkey first');
  }
  const role = KIND_ROLE[caller.kind];
  if (roles.length && !roles.includes(role)) {
    throw new DomainError(
      caller.kind === 'checkout' ? 'SCOPE_DENIED' : 'FORBIDDEN',
      `This operation is not available to ${role.toLowerCase().replace('_', ' ')} credentials`,
    );
  }
  return true;
};
