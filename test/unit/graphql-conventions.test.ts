import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema, getNamedType, isObjectType, type GraphQLField, type GraphQLObjectType } from 'graphql';

/*
 * Conventions of the GraphQL API, checked on the committed SDL (schema-drift.test.ts proves it is the
 * one the code builds): one time format and one pagination style everywhere.
 */

const schema = buildSchema(readFileSync(join(__dirname, '../../schema/schema.graphql'), 'utf8'));
const objectTypes = Object.values(schema.getTypeMap()).filter((t): t is GraphQLObjectType => isObjectType(t) && !t.name.startsWith('__'));
const fields = objectTypes.flatMap((t) => Object.values(t.getFields()).map((f) => ({ type: t.name, field: f as GraphQLField<unknown, unknown> })));

it('every time is an ISO-8601 DateTime (REST alone keeps Unix seconds): no *At field is an Int or a String', () => {
  const times = fields.filter(({ field }) => /At$/.test(field.name) || /^(at|expiredAt)$/.test(field.name));
  expect(times.length).toBeGreaterThan(20);
  expect(
    times.filter(({ field }) => getNamedType(field.type).name !== 'DateTime').map(({ type, field }) => `${type}.${field.name}: ${String(field.type)}`),
  ).toEqual([]);
});

it('every time argument is a DateTime too', () => {
  const args = fields.flatMap(({ type, field }) =>
    field.args.filter((a) => /(From|To|^from|^to)$/.test(a.name)).map((a) => ({ name: `${type}.${field.name}(${a.name})`, type: getNamedType(a.type).name })),
  );
  expect(args.length).toBeGreaterThan(5);
  expect(args.filter((a) => a.type !== 'DateTime')).toEqual([]);
});

it('one pagination style: every paged field is a Relay connection (edges, pageInfo, totalCount) paged by first/after, never limit/offset', () => {
  const paged = fields.filter(({ field }) => field.args.some((a) => ['first', 'after', 'limit', 'offset'].includes(a.name)));
  expect(paged.map(({ field }) => field.name).sort()).toEqual(['auditEvents', 'orders', 'paymentLinks', 'payments', 'refunds', 'sweeps', 'webhookDeliveries']);
  for (const { field } of paged) {
    expect(field.args.map((a) => a.name)).toEqual(expect.arrayContaining(['first', 'after']));
    expect(field.args.map((a) => a.name)).not.toEqual(expect.arrayContaining(['limit']));
    expect(field.args.map((a) => a.name)).not.toEqual(expect.arrayContaining(['offset']));
    const connection = getNamedType(field.type) as GraphQLObjectType;
    expect(Object.keys(connection.getFields())).toEqual(expect.arrayContaining(['edges', 'pageInfo', 'totalCount']));
    const edge = getNamedType(connection.getFields().edges!.type) as GraphQLObjectType;
    expect(Object.keys(edge.getFields()).sort()).toEqual(['cursor', 'node']);
  }
});
