/**
 * Parsed (and validated) GraphQL documents by their text, most recently used kept, at most `max`.
 * A parse error is not cached (it is thrown to the caller each time).
 */
export class DocumentCache<T> {
  private readonly entries = new Map<string, T>();

  constructor(
    private readonly load: (text: string) => T,
    private readonly max = 500,
    private readonly maxTextLength = 20_000,
  ) {}

  get(text: string): T {
    const hit = this.entries.get(text);
    if (hit !== undefined) {
      // Most recently used last: the first key is the one to evict.
      this.entries.delete(text);
      this.entries.set(text, hit);
      return hit;
    }
    const value = this.load(text);
    if (text.length <= this.maxTextLength) {
      this.entries.set(text, value);
      if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    }
    return value;
  }
}
