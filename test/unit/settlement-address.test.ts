import { Keypair, PublicKey } from '@solana/web3.js';
import { driverFor } from '../../src/chains/registry';
import { tronAddressFromBody } from '../../src/chains/tron/tron.address';

/** Each family's settlement-address rules (ChainFamilyDriver.checkSettlementAddress): accepted in canonical form, or refused with a reason. */
const ok = (network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA', address: string) => driverFor(network).checkSettlementAddress(address);

describe('EVM (EIP-55)', () => {
  // EIP-55's own test vector.
  const good = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
  it.each(['ETHEREUM', 'BINANCE'] as const)('%s: a checksummed address is kept; all lower or upper case is accepted and checksummed', (n) => {
    expect(ok(n, good)).toEqual({ ok: true, address: good });
    expect(ok(n, good.toLowerCase())).toEqual({ ok: true, address: good });
    expect(ok(n, `0x${good.slice(2).toUpperCase()}`)).toEqual({ ok: true, address: good });
  });
  it.each([
    ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD', /EIP-55 checksum/],
    ['0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae', /40 hexadecimal digits/],
    ['5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', /0x followed by/],
    ['0xZZaeb6053f3e94c9b9a09f33669435e7ef1beaed', /hexadecimal/],
    ['0x0000000000000000000000000000000000000000', /zero address/],
  ])('%s is refused (%s)', (address, reason) => {
    const r = ok('ETHEREUM', address);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(reason);
  });
});

describe('TRON (base58check T…)', () => {
  const good = tronAddressFromBody('5aaeb6053f3e94c9b9a09f33669435e7ef1beaed');
  it('a T-address is accepted as is', () => expect(ok('TRON', good)).toEqual({ ok: true, address: good }));
  it.each([
    [good.slice(0, 20) + (good[20] === 'a' ? 'b' : 'a') + good.slice(21), /checksum/],
    ['41' + '5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', /starting with T/],
    [good.slice(0, 33), /34 base58 characters/],
    [tronAddressFromBody('0'.repeat(40)), /zero address/],
  ])('%s is refused (%s)', (address, reason) => {
    const r = ok('TRON', address);
    expect(!r.ok && r.reason).toMatch(reason);
  });
});

describe('SOLANA (32-byte ed25519 public key)', () => {
  it('a wallet key is accepted', () => {
    const key = Keypair.generate().publicKey.toBase58();
    expect(ok('SOLANA', key)).toEqual({ ok: true, address: key });
  });
  it.each([
    [
      PublicKey.findProgramAddressSync([Buffer.from('vault')], new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'))[0].toBase58(),
      /not on the ed25519 curve/,
    ],
    ['11111111111111111111111111111111', /program address/],
    ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', /program address/],
    ['0OIl', /32-byte public key/],
    ['1'.repeat(45), /32-byte public key/],
  ])('%s is refused (%s)', (address, reason) => {
    const r = ok('SOLANA', address);
    expect(!r.ok && r.reason).toMatch(reason);
  });
});
