import { EvmRpcClient, EvmRpcError } from '../../src/chains/evm/evm.rpc.js';

type Req = { id: number; method: string; params: unknown[] };

/** A fetch answering JSON-RPC batches with `answer` per request (in reverse order, as nodes may). */
function fakeFetch(answer: (r: Req) => Record<string, unknown>, opts: { batches?: boolean } = {}) {
  const bodies: unknown[] = [];
  const impl = (async (_url: string, init: { body: string }) => {
    const body = JSON.parse(init.body) as Req | Req[];
    bodies.push(body);
    let out: unknown;
    if (Array.isArray(body))
      out =
        opts.batches === false
          ? { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch not supported' } }
          : [...body].reverse().map((r) => ({ jsonrpc: '2.0', id: r.id, ...answer(r) }));
    else out = { jsonrpc: '2.0', id: body.id, ...answer(body) };
    return new Response(JSON.stringify(out), { status: 200 });
  }) as unknown as typeof fetch;
  return { impl, bodies };
}

describe('EvmRpcClient.batch', () => {
  it('sends one request per 100 calls and returns results in input order', async () => {
    const f = fakeFetch((r) => ({ result: `0x${(r.params[0] as number).toString(16)}` }));
    const rpc = new EvmRpcClient({ urls: ['http://node'], timeoutMs: 1000, fetch: f.impl });
    const out = await rpc.batch<string>(Array.from({ length: 250 }, (_, i) => ({ method: 'eth_x', params: [i] })));
    expect(out.map((x) => Number(x))).toEqual(Array.from({ length: 250 }, (_, i) => i));
    expect(f.bodies.map((b) => (b as Req[]).length)).toEqual([100, 100, 50]);
  });

  it('throws the request error of an item (not retried)', async () => {
    const f = fakeFetch((r) => ((r.params[0] as number) === 3 ? { error: { code: 3, message: 'execution reverted' } } : { result: '0x1' }));
    const rpc = new EvmRpcClient({ urls: ['http://node'], timeoutMs: 1000, fetch: f.impl });
    await expect(rpc.batch(Array.from({ length: 5 }, (_, i) => ({ method: 'eth_call', params: [i] })))).rejects.toBeInstanceOf(EvmRpcError);
    expect(f.bodies).toHaveLength(1);
  });

  it('falls back to single calls on a node that refuses batches', async () => {
    const f = fakeFetch((r) => ({ result: `0x${(r.params[0] as number).toString(16)}` }), { batches: false });
    const rpc = new EvmRpcClient({ urls: ['http://node'], timeoutMs: 1000, fetch: f.impl });
    expect((await rpc.batch<string>([0, 1, 2].map((i) => ({ method: 'eth_x', params: [i] })))).map(Number)).toEqual([0, 1, 2]);
    expect((await rpc.batch<string>([3, 4].map((i) => ({ method: 'eth_x', params: [i] })))).map(Number)).toEqual([3, 4]);
    // one refused batch, then single calls only
    expect(f.bodies.filter(Array.isArray)).toHaveLength(1);
    expect(f.bodies.filter((b) => !Array.isArray(b))).toHaveLength(5);
  });
});
