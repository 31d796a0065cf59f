declare module 'eth-url-parser' {
  export interface ParsedEip681 {
    scheme: string;
    prefix?: string;
    target_address: string;
    chain_id?: string;
    function_name?: string;
    parameters: Record<string, string>;
  }
  export function parse(uri: string): ParsedEip681;
  export function build(data: Partial<ParsedEip681>): string;
}
