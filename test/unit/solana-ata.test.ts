import { Keypair, PublicKey } from '@solana/web3.js';
import { ASSOCIATED_TOKEN_PROGRAM_ID, getAssociatedTokenAddressSync, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '@solana/spl-token';
import { associatedTokenAddress, solanaDriver } from '../../src/chains/solana/solana.driver';

// The driver derives associated token accounts without @solana/spl-token (an API process need not load
// it); spl-token is the reference it must agree with.
describe('Solana associated token accounts without spl-token', () => {
  const mints = [new PublicKey('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'), ...Array.from({ length: 5 }, () => Keypair.generate().publicKey)];

  test('the same address as getAssociatedTokenAddressSync, for Token and Token-2022', () => {
    for (let i = 0; i < 50; i++) {
      const owner = Keypair.generate().publicKey;
      for (const mint of mints) {
        for (const program of [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID]) {
          expect(associatedTokenAddress(owner.toBase58(), mint.toBase58(), program.toBase58())).toBe(
            getAssociatedTokenAddressSync(mint, owner, false, program).toBase58(),
          );
        }
      }
    }
  });

  test('an off-curve owner is refused, as spl-token refuses it', () => {
    const pda = getAssociatedTokenAddressSync(mints[0]!, Keypair.generate().publicKey);
    expect(() => getAssociatedTokenAddressSync(mints[0]!, pda)).toThrow();
    expect(() => associatedTokenAddress(pda, mints[0]!, TOKEN_PROGRAM_ID)).toThrow('off-curve owner');
  });

  test('the program ids a wallet can never be are spl-token’s', () => {
    for (const program of [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, ASSOCIATED_TOKEN_PROGRAM_ID]) {
      expect(solanaDriver.checkSettlementAddress(program.toBase58())).toMatchObject({ ok: false, reason: expect.stringContaining('program address') });
    }
  });
});
