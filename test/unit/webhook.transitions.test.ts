import {
  canMoveDelivery,
  deliveryBirth,
  deliveryMove,
  IllegalDeliveryTransition,
  WEBHOOK_DELIVERY_MOVES,
  WEBHOOK_DELIVERY_STATES,
  WEBHOOK_DELIVERY_TRANSITIONS,
} from '../../src/modules/webhooks/webhook.transitions';

// The SQL builder every delivery status write goes through (test/webhooks/transitions.test.ts drives the
// real services through it): a move missing from the table cannot even be built.
const ALL_PAIRS = WEBHOOK_DELIVERY_STATES.flatMap((from) => WEBHOOK_DELIVERY_STATES.map((to) => [from, to] as const));

describe('deliveryMove', () => {
  it.each(ALL_PAIRS)('%s → %s is built exactly when the table lists it', (from, to) => {
    const listed = WEBHOOK_DELIVERY_MOVES.some((m) => m.from === from && m.to === to);
    expect(canMoveDelivery(from, to)).toBe(listed);
    if (listed) expect(deliveryMove([from], to, 'd')).toEqual({ set: `state = '${to}'`, where: `d.state in ('${from}')`, targets: [to] });
    else expect(() => deliveryMove([from], to)).toThrow(IllegalDeliveryTransition);
  });

  it('a CASE target is checked for every branch and every source', () => {
    const ok = deliveryMove(['sending'], { cases: [[`v.outcome = 'delivered'`, 'delivered']], else: 'pending' });
    expect(ok.set).toBe(`state = case when v.outcome = 'delivered' then 'delivered' else 'pending' end`);
    expect(ok.where).toBe(`state in ('sending')`);
    expect(() => deliveryMove(['sending', 'delivered'], { cases: [['true', 'pending']], else: 'delivered' })).toThrow(/delivered → delivered/);
    expect(() => deliveryMove(['pending'], { cases: [['true', 'sending']], else: 'delivered' })).toThrow(/pending → delivered/);
  });

  it('a delivery is born pending or sending, never delivered or failed', () => {
    expect(deliveryBirth('pending')).toBe(`'pending'`);
    expect(deliveryBirth('sending')).toBe(`'sending'`);
    expect(() => deliveryBirth('delivered')).toThrow();
    expect(() => deliveryBirth('failed')).toThrow();
  });

  it('the per-state view is derived from the rows (one source for docs and code)', () => {
    for (const s of WEBHOOK_DELIVERY_STATES)
      expect(new Set(WEBHOOK_DELIVERY_TRANSITIONS[s])).toEqual(new Set(WEBHOOK_DELIVERY_MOVES.filter((m) => m.from === s).map((m) => m.to)));
  });
});
