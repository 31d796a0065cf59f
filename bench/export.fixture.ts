/**
 * Bulk SQL fixture for bench:export: one merchant, `n` sandbox orders (a third paid on TRON USDT with
 * a locked quote and a settled deposit, a third expired, a third open), created one second apart.
 * Plain INSERT … SELECT generate_series: about 10–30 s per million orders on this machine.
 */
export function exportFixtureSql(merchantId: string, n: number): string[] {
  return [
    `insert into merchants (id, name) values ('${merchantId}', 'Bench export')`,
    `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values (gen_random_uuid(), '${merchantId}', 'sandbox', 'bench-not-a-seed')`,
    `insert into orders (id, merchant_id, environment, order_no, amount, status, customer_name, customer_email, expires_at, created_at, paid_at)
     select gen_random_uuid(), '${merchantId}', 'sandbox', 'EXP-' || g, 10000 + (g % 5000) * 100,
            case g % 3 when 0 then 'Success' when 1 then 'Expired' else 'Created' end,
            'Customer ' || g, 'c' || g || '@shop.test',
            now() - make_interval(secs => g) + interval '30 minutes', now() - make_interval(secs => g),
            case when g % 3 = 0 then now() - make_interval(secs => g) + interval '5 minutes' end
     from generate_series(1, ${n}) g`,
    `insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                         fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
     select gen_random_uuid(), o.id, t.id, 'TRON', 6, 'fallback', '16250', o.amount, o.amount * 1000000 / 16250, '1', true,
            ceil(o.amount / 100.0), ceil(o.amount / 100.0) * 1000000 / 16250, o.amount, o.amount * 1000000 / 16250, o.amount - ceil(o.amount / 100.0), (o.amount - ceil(o.amount / 100.0)) * 1000000 / 16250
     from orders o cross join (select id from tokens where environment = 'sandbox' and network = 'TRON' and symbol = 'USDT' limit 1) t
     where o.merchant_id = '${merchantId}' and o.status = 'Success'`,
    `insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type, unique_code,
                           unique_code_amount, total_amount, total_amount_fiat, status, expires_at, created_at, amount_received)
     select gen_random_uuid(), q.order_id, q.token_id, q.id, w.id, 'sandbox', 'TRON', 'tron', row_number() over () - 1, 'TBench' || q.id, 'TRUSTWALLET', 1 + (row_number() over ()) % 999,
            0, q.total_crypto, q.total_idr, 'closed', now(), now(), q.total_crypto
     from quotes q join orders o on o.id = q.order_id cross join (select id from merchant_wallets where merchant_id = '${merchantId}') w
     where o.merchant_id = '${merchantId}'`,
    // What the status writer copies onto an order when it becomes Success (the paying deposit's facts).
    `update orders o set paid_deposit_id = d.id, paid_network = d.network, paid_token_id = d.token_id, paid_decimals = 6, paid_amount = d.amount_received,
                         fee_idr = q.fee_amount_idr, net_idr = o.amount - q.fee_amount_idr
     from deposits d join quotes q on q.id = d.quote_id
     where d.order_id = o.id and o.merchant_id = '${merchantId}' and o.status = 'Success'`,
    `analyze`,
  ];
}
