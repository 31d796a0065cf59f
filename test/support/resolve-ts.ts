import Module from 'node:module';

/**
 * jest's moduleNameMapper does not apply to globalSetup/globalTeardown, which load src/ through plain
 * require: map NodeNext-style `./x.js` specifiers to the `.ts` source there too.
 */
type Resolve = (request: string, ...rest: unknown[]) => string;
const mod = Module as unknown as { _resolveFilename: Resolve };
const original = mod._resolveFilename;
mod._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (/^\.{1,2}\/.*\.js$/.test(request)) {
    try {
      return original.call(this, request.slice(0, -3), ...rest);
    } catch {
      /* fall through to the original specifier */
    }
  }
  return original.call(this, request, ...rest);
};
