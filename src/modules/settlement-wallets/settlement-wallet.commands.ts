import { z } from 'zod';
import { ENVIRONMENTS, NETWORKS } from '../../common/environment.js';

/* SettlementWalletService's commands, validated once at the service boundary (GraphQL and REST alike). */

const environment = z.enum(ENVIRONMENTS, { message: `must be one of ${ENVIRONMENTS.join(', ')}` });
export const network = z.enum(NETWORKS, { message: `must be one of ${NETWORKS.join(', ')}` });

export const setSettlementWalletInput = z.object({
  environment,
  network,
  /** Checked by the network family's driver (checksum, encoding, curve), then against the gateway's own addresses. */
  address: z.string({ message: 'must be the settlement address (string)' }).trim().min(1, 'must not be empty').max(128, 'is too long to be an address'),
  /** The account password again (docs/security.md "Settlement addresses"). */
  password: z
    .string({ message: 'is required: changing a settlement address needs the account password' })
    .min(1, 'is required: changing a settlement address needs the account password')
    .max(1024, 'is too long'),
});
export type SetSettlementWalletCommand = z.input<typeof setSettlementWalletInput>;

export const listSettlementWalletsInput = z.object({ environment, network: network.optional() });
export type ListSettlementWalletsCommand = z.input<typeof listSettlementWalletsInput>;
