import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export interface GqlResult<T> {
  status: number;
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string; [k: string]: unknown } }[];
}

/** Executes a codegen-typed document over HTTP, like a dashboard frontend. */
export async function gql<TResult, TVars>(
  base: string,
  doc: TypedDocumentNode<TResult, TVars>,
  variables?: TVars,
  headers: Record<string, string> = {},
): Promise<GqlResult<TResult>> {
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: print(doc), variables }),
  });
  const body = (await res.json()) as GqlResult<TResult>;
  return { ...body, status: res.status };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A graphql-ws client on the same port and path (Node 20 has no global WebSocket). */
export function wsClient(base: string, connectionParams: Record<string, unknown> = {}): Client {
  return createClient({ url: base.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
}

export function wsQuery<TResult, TVars>(client: Client, doc: TypedDocumentNode<TResult, TVars>, variables?: TVars): Promise<GqlResult<TResult>> {
  return new Promise((resolve, reject) => {
    let result: GqlResult<TResult> = { status: 0 };
    client.subscribe<TResult>(
      { query: print(doc), variables: variables as Record<string, unknown> | undefined },
      {
        next: (v) => (result = { status: 0, data: v.data as TResult, errors: v.errors as GqlResult<TResult>['errors'] }),
        error: (e) => (Array.isArray(e) ? resolve({ status: 0, errors: e as GqlResult<TResult>['errors'] }) : reject(e)),
        complete: () => resolve(result),
      },
    );
  });
}
