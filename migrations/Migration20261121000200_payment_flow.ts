import { Migration } from '@mikro-orm/migrations';

interface SeedToken {
  environment: 'sandbox' | 'production';
  network: string;
  profile: 'mainnet' | 'testnet' | 'local';
  symbol: string;
  name: string;
  address: string;
  decimals: number;
}

/** The token registry's seed: the spec's testnets, the local dev chains, and the four mainnets. */
const TOKENS: SeedToken[] = [
  // production — mainnets (BSC's USDT/USDC have 18 decimals)
  {
    environment: 'production',
    network: 'ETHEREUM',
    profile: 'mainnet',
    symbol: 'USDT',
    name: 'Tether USD',
    address: '0xdAC17F958D2ee523a2206206994597C13D831ec7',
    decimals: 6,
  },
  {
    environment: 'production',
    network: 'ETHEREUM',
    profile: 'mainnet',
    symbol: 'USDC',
    name: 'USD Coin',
    address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    decimals: 6,
  },
  {
    environment: 'production',
    network: 'BINANCE',
    profile: 'mainnet',
    symbol: 'USDT',
    name: 'Tether USD (BSC)',
    address: '0x55d398326f99059fF775485246999027B3197955',
    decimals: 18,
  },
  {
    environment: 'production',
    network: 'BINANCE',
    profile: 'mainnet',
    symbol: 'USDC',
    name: 'USD Coin (BSC)',
    address: '0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d',
    decimals: 18,
  },
  {
    environment: 'production',
    network: 'TRON',
    profile: 'mainnet',
    symbol: 'USDT',
    name: 'Tether USD (TRC-20)',
    address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
    decimals: 6,
  },
  {
    environment: 'production',
    network: 'TRON',
    profile: 'mainnet',
    symbol: 'USDC',
    name: 'USD Coin (TRC-20)',
    address: 'TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8',
    decimals: 6,
  },
  {
    environment: 'production',
    network: 'SOLANA',
    profile: 'mainnet',
    symbol: 'USDT',
    name: 'Tether USD (SPL)',
    address: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB',
    decimals: 6,
  },
  {
    environment: 'production',
    network: 'SOLANA',
    profile: 'mainnet',
    symbol: 'USDC',
    name: 'USD Coin (SPL)',
    address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    decimals: 6,
  },
  // sandbox — public testnets
  {
    environment: 'sandbox',
    network: 'ETHEREUM',
    profile: 'testnet',
    symbol: 'USDT',
    name: 'Tether USD (Sepolia)',
    address: '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06',
    decimals: 6,
  },
  {
    environment: 'sandbox',
    network: 'ETHEREUM',
    profile: 'testnet',
    symbol: 'USDC',
    name: 'USD Coin (Sepolia)',
    address: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238',
    decimals: 6,
  },
  {
    environment: 'sandbox',
    network: 'BINANCE',
    profile: 'testnet',
    symbol: 'USDT',
    name: 'Tether USD (BNB testnet)',
    address: '0x337610d27c682E347C9cD60BD4b3b107C9d34dDd',
    decimals: 18,
  },
  {
    environment: 'sandbox',
    network: 'TRON',
    profile: 'testnet',
    symbol: 'USDT',
    name: 'Tether USD (Nile)',
    address: 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf',
    decimals: 6,
  },
  {
    environment: 'sandbox',
    network: 'SOLANA',
    profile: 'testnet',
    symbol: 'USDC',
    name: 'USD Coin (devnet)',
    address: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
    decimals: 6,
  },
  // sandbox — local anvil chains started by `npm start` (deterministic deploy addresses, src/devchain)
  {
    environment: 'sandbox',
    network: 'ETHEREUM',
    profile: 'local',
    symbol: 'USDT',
    name: 'Tether USD (dev)',
    address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    decimals: 6,
  },
  {
    environment: 'sandbox',
    network: 'ETHEREUM',
    profile: 'local',
    symbol: 'USDC',
    name: 'USD Coin (dev)',
    address: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    decimals: 6,
  },
  {
    environment: 'sandbox',
    network: 'BINANCE',
    profile: 'local',
    symbol: 'USDT',
    name: 'Tether USD (dev BSC)',
    address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
    decimals: 18,
  },
  {
    environment: 'sandbox',
    network: 'BINANCE',
    profile: 'local',
    symbol: 'USDC',
    name: 'USD Coin (dev BSC)',
    address: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    decimals: 18,
  },
];

/** Tokens, orders (with scoped checkout keys), locked quotes, HD wallets, deposits. */
export class Migration20261121000200_payment_flow extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "tokens" (
        "id" uuid not null primary key,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "profile" text not null check ("profile" in ('mainnet','testnet','local')),
        "symbol" text not null,
        "name" text not null,
        "address" text not null,
        "decimals" int not null check ("decimals" between 0 and 36),
        "active" boolean not null default true,
        "created_at" timestamptz not null default now(),
        constraint "tokens_environment_network_profile_address_unique" unique ("environment", "network", "profile", "address")
      );`);
    const knex = this.getKnex();
    this.addSql(
      knex
        .insert(TOKENS.map((t) => ({ id: knex.raw('gen_random_uuid()'), ...t })))
        .into('tokens')
        .toQuery(),
    );
    this.addSql(`
      create table "orders" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "order_no" text not null,
        "amount" numeric(78,0) not null check ("amount" > 0),
        "currency" text not null default 'IDR',
        "status" text not null default 'Created' check ("status" in ('Created','Processing','Success','Underpaid','Expired')),
        "customer_name" text null,
        "customer_email" text null,
        "source" text not null default 'api' check ("source" in ('api','payment_link')),
        "payment_link_id" uuid null,
        "checkout_key_hash" text null,
        "checkout_key_expires_at" timestamptz null,
        "expires_at" timestamptz not null,
        "paid_at" timestamptz null,
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        constraint "orders_merchant_id_environment_order_no_unique" unique ("merchant_id", "environment", "order_no"),
        constraint "orders_checkout_key_hash_unique" unique ("checkout_key_hash")
      );`);
    this.addSql(`create index "orders_merchant_id_environment_created_at_index" on "orders" ("merchant_id", "environment", "created_at");`);
    // The expiry job scans open orders by deadline.
    this.addSql(`create index "orders_open_expires_at_index" on "orders" ("expires_at") where "status" in ('Created','Processing');`);
    this.addSql(`
      create table "quotes" (
        "id" uuid not null primary key,
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "network" text not null,
        "decimals" int not null,
        "rate_source" text not null,
        "crypto_rate" text not null,
        "amount_idr" numeric(78,0) not null,
        "amount_crypto" numeric(78,0) not null,
        "fee_percent" text not null,
        "fee_included" boolean not null,
        "fee_amount_idr" numeric(78,0) not null,
        "fee_amount_crypto" numeric(78,0) not null,
        "total_idr" numeric(78,0) not null,
        "total_crypto" numeric(78,0) not null,
        "merchant_receives_idr" numeric(78,0) not null,
        "merchant_receives_crypto" numeric(78,0) not null,
        "locked_at" timestamptz not null default now(),
        constraint "quotes_order_id_token_id_unique" unique ("order_id", "token_id")
      );`);
    this.addSql(`create index "quotes_token_id_index" on "quotes" ("token_id");`);
    this.addSql(`
      create table "merchant_wallets" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "mnemonic_ciphertext" text not null,
        "created_at" timestamptz not null default now(),
        constraint "merchant_wallets_merchant_id_environment_unique" unique ("merchant_id", "environment")
      );`);
    // Next free derivation index per wallet and chain family, taken with one atomic UPDATE … RETURNING.
    this.addSql(`
      create table "wallet_counters" (
        "wallet_id" uuid not null references "merchant_wallets" ("id") on delete cascade,
        "family" text not null check ("family" in ('evm','tron','solana')),
        "next_index" int not null default 0,
        primary key ("wallet_id", "family")
      );`);
    this.addSql(`
      create table "deposits" (
        "id" uuid not null primary key,
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "quote_id" uuid not null references "quotes" ("id") on update cascade,
        "wallet_id" uuid not null references "merchant_wallets" ("id") on update cascade,
        "environment" text not null,
        "network" text not null,
        "family" text not null,
        "derivation_index" int not null check ("derivation_index" >= 0),
        "address" text not null,
        "watch_address" text null,
        "wallet_type" text not null check ("wallet_type" in ('METAMASK','WALLETCONNECT','TRUSTWALLET','PHANTOM')),
        "unique_code" int not null check ("unique_code" between 1 and 999),
        "unique_code_amount" numeric(78,0) not null,
        "total_amount" numeric(78,0) not null,
        "total_amount_fiat" numeric(78,0) not null,
        "status" text not null default 'open' check ("status" in ('open','closed')),
        "cursor" text null,
        "expires_at" timestamptz not null,
        "created_at" timestamptz not null default now(),
        constraint "deposits_order_id_token_id_unique" unique ("order_id", "token_id"),
        constraint "deposits_wallet_id_family_derivation_index_unique" unique ("wallet_id", "family", "derivation_index")
      );`);
    this.addSql(`create index "deposits_environment_network_status_index" on "deposits" ("environment", "network", "status");`);
    this.addSql(`create index "deposits_quote_id_index" on "deposits" ("quote_id");`);
    // An address is never handed out twice, whatever the index bookkeeping says.
    this.addSql(`create unique index "deposits_network_address_unique" on "deposits" ("family", "address");`);
    // The unique code tells open deposits of one token apart.
    this.addSql(`create unique index "deposits_open_unique_code" on "deposits" ("environment", "network", "token_id", "unique_code") where "status" = 'open';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "deposits", "wallet_counters", "merchant_wallets", "quotes", "orders", "tokens" cascade;`);
  }
}
