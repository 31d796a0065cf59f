import type { Network } from '../common/environment.js';

/**
 * Which chain a provider serves: the EVM chain id (null elsewhere) and the hash of its genesis block
 * (EVM block 0's hash, TRON block 0's `blockID`, SOLANA `getGenesisHash`). Two providers with the
 * same identity serve the same chain; a node restarted as a fresh dev chain, a fork, or another
 * network behind the same URL has another.
 */
export interface ChainIdentity {
  chainId: string | null;
  genesis: string;
}

export const sameChain = (a: ChainIdentity, b: ChainIdentity): boolean =>
  a.genesis.toLowerCase() === b.genesis.toLowerCase() && (a.chainId ?? null) === (b.chainId ?? null);

export const describeIdentity = (i: ChainIdentity): string => (i.chainId !== null ? `chain id ${i.chainId}, genesis ${i.genesis}` : `genesis ${i.genesis}`);

/**
 * The production chains' genesis hashes: a production provider serving anything else (a testnet, a
 * fork, a devnet) is refused from its first answer, before the watcher stored any identity.
 */
export const MAINNET_GENESIS: Record<Network, string> = {
  ETHEREUM: '0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3',
  BINANCE: '0x0d21840abff46b96c84b2ac9e10e4f5cdaeb5693cb665db62a2f3b02d2d57b5b',
  TRON: '00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc',
  SOLANA: '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d',
};

/** The URL's host only: paths and queries of RPC URLs may carry API keys. */
export function providerHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'unknown';
  }
}

/** A provider serves another chain than the one expected: refused (never used for this network). */
export class WrongChainError extends Error {
  override readonly name = 'WrongChainError';
  readonly code = 'WRONG_CHAIN';
  constructor(
    readonly network: Network,
    readonly provider: string,
    readonly got: ChainIdentity,
    readonly expected: { chainId: string | null; genesis: string | null },
  ) {
    const want = [expected.chainId !== null ? `chain id ${expected.chainId}` : null, expected.genesis ? `genesis ${expected.genesis}` : null]
      .filter(Boolean)
      .join(', ');
    super(`${network} provider ${provider} serves another chain (${describeIdentity(got)}; expected ${want})`);
  }
}

/** One provider as the gate last saw it (readiness details, metrics, logs). Host only, never the URL. */
export interface ProviderStatus {
  provider: string;
  /** `ok`: verified on the expected chain; `refused`: on another chain; `unknown`: not verified yet or unreachable when probed. */
  state: 'ok' | 'refused' | 'unknown';
  identity: ChainIdentity | null;
  /** Why it is refused or unknown. */
  reason: string | null;
  checkedAt: number | null;
}

/** The adapter's view of which chain its providers serve (`ChainAdapter.identity`). */
export interface ChainIdentityCapability {
  /**
   * The identity of the chain the provider used last serves: probed on first use, on every switch of
   * provider and every `recheckMs`; `force` probes it now. Throws `WrongChainError` when that provider
   * is refused (what it answered this tick is not to be trusted).
   */
  current(force?: boolean): Promise<ChainIdentity>;
  /** From now on providers on another chain than `identity` are refused (the watcher's stored identity, production). */
  pin(identity: ChainIdentity): void;
  /**
   * The provider used last just served a block whose parent is a block of the watched chain (the
   * watcher's cursor): it is on that chain, so its verification counts as renewed now, without the
   * periodic probe. Never clears a refusal nor verifies a provider that was not verified.
   */
  vouch?(): void;
  /** Every configured provider's state (host only). */
  providers(): ProviderStatus[];
  /**
   * The chain every provider must serve, once it is known (configured or pinned): its chain id (EVM)
   * and genesis. Null while the genesis is not known yet (a sandbox before its first verification).
   */
  expected?(): ChainIdentity | null;
  /** When EVERY provider was refused for serving another chain: the identity more than half of them serve, else null. */
  allRefused(): ChainIdentity | null;
  /**
   * The chain to watch when nothing is stored yet: the expected one when it is known (production's
   * mainnet, a configured sandbox genesis), else the one more than half of the providers serve.
   * Probes every provider and pins the result, so a provider on another chain is refused from now on,
   * whichever answered first. Throws `ChainDisagreementError` when no chain has a majority.
   */
  establish(): Promise<ChainIdentity>;
}

/** No chain is expected yet and the providers serve different chains, none of them by a majority: none is trusted. */
export class ChainDisagreementError extends Error {
  override readonly name = 'ChainDisagreementError';
  readonly code = 'CHAIN_DISAGREEMENT';
  constructor(
    readonly network: Network,
    readonly served: { provider: string; identity: ChainIdentity }[],
  ) {
    super(
      `${network} providers serve different chains (${served.map((s) => `${s.provider}: ${describeIdentity(s.identity)}`).join('; ')}); none is watched until a majority agrees or the expected genesis is configured`,
    );
  }
}

const identityKey = (i: ChainIdentity): string => `${i.chainId ?? ''}/${i.genesis.toLowerCase()}`;

/** The identity more than half of `served` share, else null. */
function majority(served: ChainIdentity[]): ChainIdentity | null {
  const counts = new Map<string, { identity: ChainIdentity; n: number }>();
  for (const i of served) {
    const c = counts.get(identityKey(i)) ?? { identity: i, n: 0 };
    c.n++;
    counts.set(identityKey(i), c);
  }
  return [...counts.values()].find((c) => c.n * 2 > served.length)?.identity ?? null;
}

export interface ProviderGateOptions {
  network: Network;
  urls: string[];
  /** Asks ONE provider (no failover, no gate) for its chain identity. */
  probe: (url: string) => Promise<ChainIdentity>;
  /** EVM: the configured chain id; a provider with another is always refused. */
  chainId?: string | null;
  /** A provider with another genesis is refused (production: the mainnet's, then the stored one). Absent: any genesis is followed (sandbox). */
  genesis?: string | null;
  /** Verified providers are probed again after this long (a URL can start serving another chain). Default 30 s. */
  recheckMs?: number;
  /** A refused provider is probed again after this long (it may be fixed). Default 60 s. */
  refusedRetryMs?: number;
  /** Called once per refusal (metrics, logs). */
  onRefused?: (error: WrongChainError) => void;
  /**
   * False: the RPC clients' calls are not gated (no probe before use); `current()` still probes.
   * Adapters built outside the watchers (tools, tests of one adapter) run so. Default true.
   */
  enforce?: boolean;
  now?: () => number;
}

interface Entry {
  status: ProviderStatus;
  /** A probe in flight: callers share it. */
  probing?: Promise<void>;
  /** The identity it was last refused for: the same refusal found again is not alarmed twice. */
  refusedFor?: string;
  /** When it was last actually probed (a vouch renews `checkedAt`, never this). */
  probedAt?: number;
}

/**
 * Verifies each provider's chain before the RPC clients use it, and refuses those on another chain.
 * The clients call `admit(url, switched)` before every attempt: cheap while the provider was verified
 * less than `recheckMs` ago and is the one used last; a first use, a switch to another provider, or an
 * old verification probes it (one call per family). A refused provider counts as a failed attempt
 * (`wrong-chain`), so the client fails over to the next one.
 */
/** A vouched provider is still probed once every this many re-check intervals (a fork of the watched chain chains on from its cursor). */
const VOUCH_LIMIT = 10;

export class ProviderGate implements ChainIdentityCapability {
  private readonly entries = new Map<string, Entry>();
  /** Push socket URL → the identity it was last refused for (alarmed once per identity). */
  private readonly socketRefusals = new Map<string, string>();
  private readonly recheckMs: number;
  private readonly refusedRetryMs: number;
  private readonly now: () => number;
  private chainId: string | null;
  private genesis: string | null;
  /** The provider admitted last (whose identity `current()` reports). */
  private last: string;

  constructor(private readonly opts: ProviderGateOptions) {
    this.recheckMs = opts.recheckMs ?? 30_000;
    this.refusedRetryMs = opts.refusedRetryMs ?? 60_000;
    this.now = opts.now ?? Date.now;
    this.chainId = opts.chainId ?? null;
    this.genesis = opts.genesis ?? null;
    for (const url of opts.urls)
      this.entries.set(url, { status: { provider: providerHost(url), state: 'unknown', identity: null, reason: 'not checked yet', checkedAt: null } });
    this.last = opts.urls[0]!;
  }

  /**
   * Throws `WrongChainError` when `url` serves another chain; probe failures (transport) are thrown as
   * they are. `round`: a head round asking every provider at once (provider-health.ts): not a switch,
   * so a provider verified less than `recheckMs` ago is not probed again, and it does not become the
   * provider `current()` reports.
   */
  async admit(url: string, switched = false, round = false): Promise<void> {
    if (this.opts.enforce === false) {
      if (!round) this.last = url;
      return;
    }
    return this.check(url, switched, round);
  }

  private async check(url: string, switched: boolean, round = false): Promise<void> {
    const entry = this.entryOf(url);
    const s = entry.status;
    const age = s.checkedAt === null ? Infinity : this.now() - s.checkedAt;
    const moved = !round && (switched || url !== this.last);
    const due = s.state === 'unknown' || (s.state === 'ok' && (moved || age >= this.recheckMs)) || (s.state === 'refused' && age >= this.refusedRetryMs);
    if (due) {
      entry.probing ??= this.probe(url, entry).finally(() => (entry.probing = undefined));
      await entry.probing;
    }
    if (entry.status.state === 'refused') throw this.refusal(url, entry.status.identity!);
    // a round does not switch providers, unless the one used last is refused (then this verified one is)
    if (!round || this.entries.get(this.last)?.status.state === 'refused') this.last = url;
  }

  private entryOf(url: string): Entry {
    let e = this.entries.get(url);
    if (!e) {
      e = { status: { provider: providerHost(url), state: 'unknown', identity: null, reason: 'not checked yet', checkedAt: null } };
      this.entries.set(url, e);
    }
    return e;
  }

  private refusal(url: string, got: ChainIdentity): WrongChainError {
    return new WrongChainError(this.opts.network, providerHost(url), got, { chainId: this.chainId, genesis: this.genesis });
  }

  private async probe(url: string, entry: Entry): Promise<void> {
    let identity: ChainIdentity;
    try {
      identity = await this.opts.probe(url);
    } catch (err) {
      entry.status = {
        ...entry.status,
        state: 'unknown',
        reason: `identity probe failed: ${err instanceof Error ? err.message : String(err)}`,
        checkedAt: this.now(),
      };
      throw err;
    }
    const wrongId = this.chainId !== null && identity.chainId !== this.chainId;
    const wrongGenesis = this.genesis !== null && identity.genesis.toLowerCase() !== this.genesis.toLowerCase();
    if (wrongId || wrongGenesis) {
      const error = this.refusal(url, identity);
      entry.status = { provider: providerHost(url), state: 'refused', identity, reason: error.message, checkedAt: this.now() };
      if (entry.refusedFor !== identityKey(identity) && !this.alarmed(providerHost(url), identityKey(identity))) this.opts.onRefused?.(error);
      entry.refusedFor = identityKey(identity);
      return;
    }
    entry.refusedFor = undefined;
    // the provider serves the expected chain again: a later refusal of its socket is news
    for (const ws of [...this.socketRefusals.keys()]) if (providerHost(ws) === providerHost(url)) this.socketRefusals.delete(ws);
    entry.probedAt = this.now();
    entry.status = { provider: providerHost(url), state: 'ok', identity, reason: null, checkedAt: this.now() };
  }

  vouch(): void {
    const e = this.entries.get(this.last);
    // a chain that forked off ours at the cursor would chain on too: a real probe still every VOUCH_LIMIT re-checks
    if (e?.status.state === 'ok' && e.status.checkedAt !== null && e.probedAt !== undefined && this.now() - e.probedAt < VOUCH_LIMIT * this.recheckMs)
      e.status.checkedAt = this.now();
  }

  async current(force = false): Promise<ChainIdentity> {
    const entry = this.entryOf(this.last);
    // forced: probed again now, whatever its state (a refused provider may serve the expected chain again)
    if (force) entry.status = { ...entry.status, checkedAt: null, state: entry.status.state === 'ok' ? 'unknown' : entry.status.state };
    await this.check(this.last, false);
    return entry.status.identity!;
  }

  /** Whether every provider is refused; the identity a majority of them serve (the sandbox then follows that new chain). */
  allRefused(): ChainIdentity | null {
    const all = [...this.entries.values()].map((e) => e.status);
    if (!all.length || !all.every((s) => s.state === 'refused' && s.identity)) return null;
    return majority(all.map((s) => s.identity!));
  }

  async establish(): Promise<ChainIdentity> {
    const urls = [...this.entries.keys()];
    // every provider verified now against the current expectation (unreachable ones are left out):
    // what one served a while ago does not count
    for (const e of this.entries.values())
      if (!e.probing) e.status = { ...e.status, checkedAt: null, state: e.status.state === 'ok' ? 'unknown' : e.status.state };
    await Promise.allSettled(urls.map((url) => this.check(url, false, true)));
    const answered = urls.map((url) => this.entries.get(url)!.status).filter((s) => s.identity && s.state !== 'unknown');
    const ok = answered.filter((s) => s.state === 'ok');
    if (!ok.length) {
      // nobody serves the expected chain (or nobody answered): the refusals (or the probe failure) say why
      const first = answered[0];
      if (first)
        throw this.refusal(
          urls.find((u) => this.entries.get(u)!.status === first)!,
          first.identity!,
        );
      throw new Error(
        `${this.opts.network}: no provider answered its chain identity (${this.providers()
          .map((p) => `${p.provider}: ${p.reason}`)
          .join('; ')})`,
      );
    }
    // An expected genesis: every provider on it serves the expected chain (the others were refused).
    const chosen = this.genesis !== null ? ok[0]!.identity! : majority(ok.map((s) => s.identity!));
    if (!chosen)
      throw new ChainDisagreementError(
        this.opts.network,
        ok.map((s) => ({ provider: s.provider, identity: s.identity! })),
      );
    if (this.genesis === null) {
      this.pin(chosen);
      // the minority is refused at once (named, alarmed), not at its next use
      await Promise.allSettled(urls.map((url) => this.check(url, false, true)));
    }
    return chosen;
  }

  /**
   * Whether a refusal of `host` for the identity `key` was reported already, by its RPC URL or its
   * push socket (one provider behind both: alarmed once per identity).
   */
  private alarmed(host: string, key: string): boolean {
    for (const [url, e] of this.entries) if (e.refusedFor === key && providerHost(url) === host) return true;
    for (const [url, k] of this.socketRefusals) if (k === key && providerHost(url) === host) return true;
    return false;
  }

  /** Whether calls are gated (the watchers' adapters); false: tools, one-adapter tests. */
  get enforcing(): boolean {
    return this.opts.enforce !== false;
  }

  /** How long a refused provider is left alone before it is probed again. */
  get refusedRetryInterval(): number {
    return this.refusedRetryMs;
  }

  expected(): ChainIdentity | null {
    return this.genesis === null ? null : { chainId: this.chainId, genesis: this.genesis };
  }

  /** The gate's view of one RPC URL (null: not one of its providers). */
  statusOf(url: string): ProviderStatus | null {
    const e = this.entries.get(url);
    return e ? { ...e.status } : null;
  }

  /**
   * A push socket's own answer to the identity questions (EVM: `eth_chainId` and block 0 over the
   * socket): `ok` on the expected chain; `unknown` while the genesis is not known yet (the socket
   * waits, it is not subscribed blindly); `refused` on another chain (another chain id is refused even
   * before the genesis is known), reported through `onRefused` like an HTTP provider's refusal, once
   * per socket URL and identity. Socket URLs are not providers of `providers()`/`allRefused()`.
   */
  judgeSocket(url: string, identity: ChainIdentity): { state: 'ok' } | { state: 'unknown' } | { state: 'refused'; error: WrongChainError } {
    const wrongId = this.chainId !== null && identity.chainId !== this.chainId;
    const wrongGenesis = this.genesis !== null && identity.genesis.toLowerCase() !== this.genesis.toLowerCase();
    if (wrongId || wrongGenesis) {
      const error = this.refusal(url, identity);
      if (this.socketRefusals.get(url) !== identityKey(identity) && !this.alarmed(providerHost(url), identityKey(identity))) this.opts.onRefused?.(error);
      this.socketRefusals.set(url, identityKey(identity));
      return { state: 'refused', error };
    }
    if (this.genesis === null) return { state: 'unknown' };
    this.socketRefusals.delete(url);
    return { state: 'ok' };
  }

  pin(identity: ChainIdentity): void {
    if (this.genesis?.toLowerCase() === identity.genesis.toLowerCase() && (identity.chainId === null || identity.chainId === this.chainId)) return; // expected already
    this.genesis = identity.genesis;
    if (identity.chainId !== null) this.chainId = identity.chainId;
    // every verification so far was against the old expectation
    for (const e of this.entries.values())
      if (e.status.state !== 'unknown') e.status = { ...e.status, checkedAt: null, state: 'unknown', reason: 'identity pinned; not checked again yet' };
  }

  providers(): ProviderStatus[] {
    return [...this.entries.values()].map((e) => ({ ...e.status }));
  }
}
