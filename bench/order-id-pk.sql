-- Primary-key cost of random (v4) vs time-ordered (v7) order ids at 5M rows, load-independent:
-- buffers read/dirtied by 20,000 new ids. psql -X <url of a scratch database> -f bench/order-id-pk.sql
-- (≈ 8 minutes under heavy load; docs/benchmarks/orders.md, Time-ordered ids).
\timing off
drop table if exists probe_v4, probe_v7;
create table probe_v4 (id uuid primary key);
create table probe_v7 (id uuid primary key);
-- 5M existing ids of each kind: random (v4) history, and time-ordered (v7) history over 180 days.
insert into probe_v4 select gen_random_uuid() from generate_series(1, 5000000);
insert into probe_v7 select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send((extract(epoch from now() - interval '180 days' + (i::float8 / 5000000) * interval '180 days') * 1000)::int8) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid from generate_series(1, 5000000) i;
vacuum analyze probe_v4; vacuum analyze probe_v7;
select 'pk size v4', pg_size_pretty(pg_relation_size('probe_v4_pkey')), 'v7', pg_size_pretty(pg_relation_size('probe_v7_pkey'));
checkpoint;
-- 20,000 new orders' ids, as the old code made them (v4) and as the new code makes them (v7, now).
explain (analyze, buffers, costs off, timing off, summary off) insert into probe_v4 select gen_random_uuid() from generate_series(1, 20000);
explain (analyze, buffers, costs off, timing off, summary off) insert into probe_v7 select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::int8) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid from generate_series(1, 20000);
-- new v7 ids into the v4 history (a table that had random ids before this change)
explain (analyze, buffers, costs off, timing off, summary off) insert into probe_v4 select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send((extract(epoch from clock_timestamp()) * 1000)::int8) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid from generate_series(1, 20000);
drop table probe_v4, probe_v7;
