import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000100_foundation } from './Migration20261121000100_foundation.js';
import { Migration20261121000200_payment_flow } from './Migration20261121000200_payment_flow.js';
import { Migration20261121000300_payment_links } from './Migration20261121000300_payment_links.js';
import { Migration20261121000400_order_events } from './Migration20261121000400_order_events.js';
import { Migration20261121000500_payments } from './Migration20261121000500_payments.js';
import { Migration20261121000600_webhooks } from './Migration20261121000600_webhooks.js';
import { Migration20261121000700_deposit_watch_index } from './Migration20261121000700_deposit_watch_index.js';
import { Migration20261121000800_deposit_settled } from './Migration20261121000800_deposit_settled.js';
import { Migration20261121000900_checkout_key_by_id } from './Migration20261121000900_checkout_key_by_id.js';
import { Migration20261123000100_faucet_grants } from './Migration20261123000100_faucet_grants.js';
import { Migration20261123000100_watcher_failures } from './Migration20261123000100_watcher_failures.js';
import { Migration20261123000100_return_urls } from './Migration20261123000100_return_urls.js';
import { Migration20261123000200_code_pools_and_link_uses } from './Migration20261123000200_code_pools_and_link_uses.js';
import { Migration20261123000300_idempotency_keys } from './Migration20261123000300_idempotency_keys.js';
import { Migration20261123000400_unattributed_receipts } from './Migration20261123000400_unattributed_receipts.js';
import { Migration20261123000500_payment_reorgs } from './Migration20261123000500_payment_reorgs.js';
import { Migration20261123000700_analytics_views } from './Migration20261123000700_analytics_views.js';
import { Migration20261123000800_order_paid_facts } from './Migration20261123000800_order_paid_facts.js';
import { Migration20261127000500_settlement_wallets } from './Migration20261127000500_settlement_wallets.js';
import { Migration20261127000510_merchant_events } from './Migration20261127000510_merchant_events.js';
import { Migration20261127000600_sweeps } from './Migration20261127000600_sweeps.js';

/** Every migration, in order. Listed explicitly so `dist/` and the test runner load the same set. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000100_foundation', class: Migration20261121000100_foundation },
  { name: 'Migration20261121000200_payment_flow', class: Migration20261121000200_payment_flow },
  { name: 'Migration20261121000300_payment_links', class: Migration20261121000300_payment_links },
  { name: 'Migration20261121000400_order_events', class: Migration20261121000400_order_events },
  { name: 'Migration20261121000500_payments', class: Migration20261121000500_payments },
  { name: 'Migration20261121000600_webhooks', class: Migration20261121000600_webhooks },
  { name: 'Migration20261121000700_deposit_watch_index', class: Migration20261121000700_deposit_watch_index },
  { name: 'Migration20261121000800_deposit_settled', class: Migration20261121000800_deposit_settled },
  { name: 'Migration20261121000900_checkout_key_by_id', class: Migration20261121000900_checkout_key_by_id },
  { name: 'Migration20261123000100_faucet_grants', class: Migration20261123000100_faucet_grants },
  { name: 'Migration20261123000100_watcher_failures', class: Migration20261123000100_watcher_failures },
  { name: 'Migration20261123000100_return_urls', class: Migration20261123000100_return_urls },
  { name: 'Migration20261123000200_code_pools_and_link_uses', class: Migration20261123000200_code_pools_and_link_uses },
  { name: 'Migration20261123000300_idempotency_keys', class: Migration20261123000300_idempotency_keys },
  { name: 'Migration20261123000400_unattributed_receipts', class: Migration20261123000400_unattributed_receipts },
  { name: 'Migration20261123000500_payment_reorgs', class: Migration20261123000500_payment_reorgs },
  { name: 'Migration20261123000700_analytics_views', class: Migration20261123000700_analytics_views },
  { name: 'Migration20261123000800_order_paid_facts', class: Migration20261123000800_order_paid_facts },
  { name: 'Migration20261127000500_settlement_wallets', class: Migration20261127000500_settlement_wallets },
  { name: 'Migration20261127000510_merchant_events', class: Migration20261127000510_merchant_events },
  { name: 'Migration20261127000600_sweeps', class: Migration20261127000600_sweeps },
];
