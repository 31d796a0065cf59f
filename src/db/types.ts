import { Type, type Platform } from '@mikro-orm/core';

/** Integer base units (token units or IDR): `numeric(78,0)` in SQL, `bigint` in code, decimal string on the wire. */
export class AmountType extends Type<bigint, string> {
  override convertToDatabaseValue(value: bigint | string): string {
    // Nullable amount columns (an order's paid facts) pass null through.
    if (value === null || value === undefined) return value as unknown as string;
    return typeof value === 'bigint' ? value.toString() : String(BigInt(value));
  }

  override convertToJSValue(value: string | bigint): bigint {
    if (value === null || value === undefined) return value as unknown as bigint;
    return BigInt(value);
  }

  override compareAsType(): string {
    return 'string';
  }

  override getColumnType(_prop: unknown, _platform: Platform): string {
    return 'numeric(78,0)';
  }

  override ensureComparable(): boolean {
    return false;
  }
}
